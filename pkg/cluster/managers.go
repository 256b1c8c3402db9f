package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// VersionManagers counts, for each of versions, the field managers whose
// last write to an object of the CRD used that version (its managedFields
// entry names it), and in how many objects. self is left out: the plugin's
// own re-stores say nothing about clients. Metadata only, a page at a time.
func VersionManagers(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, versions []string, self string, pageSize int64) (map[string]map[string]int64, error) {
	out := map[string]map[string]int64{}
	want := map[string]string{}
	for _, v := range versions {
		want[crd.Spec.Group+"/"+v] = v
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: lifecycle.StorageVersion(crd), Resource: crd.Spec.Names.Plural}
	_, err := ListPages(ctx, meta, gvr, max(pageSize, 1), func(p Page) error {
		for _, o := range p.Items {
			// A manager has an entry per subresource it wrote: count it once
			// per object.
			seen := map[[2]string]bool{}
			for _, mf := range o.ManagedFields {
				v, ok := want[mf.APIVersion]
				if !ok || mf.Manager == self || seen[[2]string{v, mf.Manager}] {
					continue
				}
				seen[[2]string{v, mf.Manager}] = true
				if out[v] == nil {
					out[v] = map[string]int64{}
				}
				out[v][mf.Manager]++
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ManagersFinding says which clients still write a version the upgrade
// stops serving or removes.
func ManagersFinding(crd, version, replacement string, managers map[string]int64) lifecycle.Finding {
	names := slices.SortedFunc(maps.Keys(managers), func(a, b string) int {
		if managers[a] != managers[b] {
			return int(managers[b] - managers[a])
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s (%s)", n, lifecycle.Objects(managers[n]))
	}
	return lifecycle.Finding{Severity: lifecycle.SeverityWarning, Kind: lifecycle.FindingClients, CRD: crd, Version: version, Rule: "clientsOnVersion",
		Message: fmt.Sprintf("field managers whose last write used %s, which this upgrade stops serving: %s", version, strings.Join(parts, ", ")),
		Fix: []string{fmt.Sprintf("move these clients to %s before applying (a manager's entry shows only its last write)", replacement),
			fmt.Sprintf("once %s is removed, kubectl crdversion migrate %s --clean-managed-fields drops the entries that would break server-side apply", version, crd)}}
}
