package usage

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// VersionManagers counts, for each of versions, the field managers whose
// last write to an object of the CRD used that version, and in how many
// objects (FieldManagers, by manager alone): the clients still writing it.
func VersionManagers(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, versions []string, pageSize int64) (map[string]map[string]int64, error) {
	found, err := FieldManagers(ctx, meta, crd, pageSize)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]int64{}
	for _, u := range found.Managers {
		if !slices.Contains(versions, u.Version) {
			continue
		}
		if out[u.Version] == nil {
			out[u.Version] = map[string]int64{}
		}
		out[u.Version][u.Manager] += u.Objects
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
		Fix: []lifecycle.Advice{{Text: fmt.Sprintf("move these clients to %s before applying (a manager's entry shows only its last write)", replacement)},
			{Text: fmt.Sprintf("once %s is removed, drop the entries that would break server-side apply", version), Step: lifecycle.CleanManagedFields(crd)}}}
}
