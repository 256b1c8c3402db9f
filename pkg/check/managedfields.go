package check

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/usage"
)

// removedVersionEntries finds the live objects whose managedFields name a
// version of the CRD's group that the new CRD lacks. Once that version is
// gone, the API server cannot convert the entry, and every server-side
// apply of such an object fails ("request to convert CR to an invalid
// group/version", kubernetes#111937) until the entries are dropped: an
// error, whether the upgrade removes the version or it is gone already.
// Unserved versions still convert; their entries break nothing yet.
func removedVersionEntries(ctx context.Context, meta metadata.Interface, live, next *apiextensionsv1.CustomResourceDefinition, pageSize int64) ([]Finding, error) {
	gone := func(mf metav1.ManagedFieldsEntry) (string, bool) {
		gv, err := schema.ParseGroupVersion(mf.APIVersion)
		if err != nil || gv.Group != next.Spec.Group || lifecycle.SpecVersion(next, gv.Version) != nil {
			return "", false
		}
		return gv.Version, true
	}
	gvr := schema.GroupVersionResource{Group: live.Spec.Group, Version: usage.ListVersion(live), Resource: live.Spec.Names.Plural}
	found, err := cluster.ObjectsWithEntries(ctx, meta, gvr, pageSize, gone)
	if cluster.NotServedYet(live, err) {
		return nil, nil
	}
	if err != nil || len(found.Objects) == 0 {
		return nil, err
	}
	names := found.Objects
	versions := slices.SortedFunc(slices.Values(found.Versions), func(a, b string) int { return -lifecycle.ByPriority(a, b) })
	f := Finding{Severity: lifecycle.SeverityError, Kind: FindingObjects, CRD: next.Name, Version: strings.Join(versions, ", "),
		Rule: "managedFieldsOfRemovedVersion", Objects: names, Count: len(names), Object: firstNames(names)}
	what := "the new CRD removes"
	still := []string{}
	for _, v := range versions {
		if lv := lifecycle.SpecVersion(live, v); lv == nil {
			what = "the CRD no longer has"
		} else if lv.Served {
			still = append(still, v)
		}
	}
	f.Message = fmt.Sprintf("%s carry managedFields entries recorded at %s, which %s: once it is gone, every server-side apply of them (kubectl apply --server-side, a GitOps sync, a controller's apply) fails with \"request to convert CR to an invalid group/version\" until the entries are dropped",
		lifecycle.Objects(int64(len(names))), strings.Join(versions, ", "), what)
	if len(still) > 0 {
		// The cleanup drops entries of versions no longer served only.
		f.Fix = append(f.Fix, lifecycle.Advice{Text: fmt.Sprintf("stop serving %s first (served: false, a release of its own)", strings.Join(still, ", "))})
	}
	f.Fix = append(f.Fix, lifecycle.Advice{Text: "drop the entries (the objects' content is kept)", Step: lifecycle.CleanManagedFields(next.Name)},
		lifecycle.Advice{Text: "then apply the new CRDs"})
	return []Finding{f}, nil
}

// firstNames is the first few names and how many more, as grouped object
// findings show them.
func firstNames(names []string) string {
	s := strings.Join(names[:min(len(names), namedObjects)], ", ")
	if len(names) > namedObjects {
		s += fmt.Sprintf(", and %d more", len(names)-namedObjects)
	}
	return s
}
