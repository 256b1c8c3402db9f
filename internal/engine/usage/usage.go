package usage

import (
	"cmp"
	"context"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
)

// systemManagers write to every resource for the cluster's own reasons, so
// their managedFields entries say nothing about which clients use a version.
var systemManagers = map[string]bool{
	// Controllers naming no field manager, the garbage collector's patches among them: the
	// API server takes the User-Agent up to its first "/" (prefixFromUserAgent).
	"kube-controller-manager": true,
	// The garbage collector's name, should a distribution pass it as the field manager.
	"generic-garbage-collector": true,
	// The in-tree StorageVersionMigration controller's re-stores (its controller name).
	"storage-version-migrator-controller": true,
	// This plugin's re-stores and managedFields cleanups.
	cluster.FieldManager: true,
}

// IsSystemManager reports a field manager whose writes are the cluster's or this plugin's.
func IsSystemManager(name string) bool { return systemManagers[name] }

// ManagerUse counts objects whose manager's last write, by one operation, used one version.
type ManagerUse struct {
	Manager   string
	Operation string
	Version   string
	Objects   int64
}

// ManagerCount is what FieldManagers found for one CRD.
type ManagerCount struct {
	// ListedAt is the version listed at; empty when none is served.
	ListedAt string
	Objects  int64
	// Managers are sorted by version, then most objects first.
	Managers []ManagerUse
}

type managerKey struct{ manager, operation, version string }

// FieldManagers counts, per version, the field managers whose last write to an object used it,
// system managers left out; a manager counts once per object whatever its subresources.
func FieldManagers(ctx context.Context, client metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, pageSize int64) (*ManagerCount, error) {
	return FieldManagersSince(ctx, client, crd, pageSize, time.Time{})
}

// FieldManagersSince counts only writes after since (to the second: one in its second is before).
func FieldManagersSince(ctx context.Context, client metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, pageSize int64, since time.Time) (*ManagerCount, error) {
	at := ListVersion(crd)
	if at == "" {
		return &ManagerCount{}, nil
	}
	out := &ManagerCount{ListedAt: at}
	counts := map[managerKey]int64{}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: at, Resource: crd.Spec.Names.Plural}
	_, err := cluster.ListPages(ctx, client, gvr, max(pageSize, 1), func(p cluster.Page) error {
		out.Objects += int64(len(p.Items))
		countManagers(p.Items, crd, since, counts)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.Managers = sortedUses(counts)
	return out, nil
}

// ListVersion is the version to list at (stages.ListVersion): served and not deprecated,
// so the list is no request the deprecated-API metric counts.
func ListVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	return stages.ListVersion(crd)
}

func countManagers(items []metav1.PartialObjectMetadata, crd *apiextensionsv1.CustomResourceDefinition, since time.Time, counts map[managerKey]int64) {
	versions := map[string]string{}
	for _, v := range crd.Spec.Versions {
		versions[crd.Spec.Group+"/"+v.Name] = v.Name
	}
	for _, o := range items {
		seen := map[managerKey]bool{}
		for _, mf := range o.ManagedFields {
			v, ok := versions[mf.APIVersion]
			if !ok || IsSystemManager(mf.Manager) || (!since.IsZero() && mf.Time != nil && !mf.Time.Time.After(since)) {
				continue
			}
			k := managerKey{mf.Manager, string(mf.Operation), v}
			if !seen[k] {
				seen[k] = true
				counts[k]++
			}
		}
	}
}

func sortedUses(counts map[managerKey]int64) []ManagerUse {
	out := make([]ManagerUse, 0, len(counts))
	for k, n := range counts {
		out = append(out, ManagerUse{Manager: k.manager, Operation: k.operation, Version: k.version, Objects: n})
	}
	slices.SortFunc(out, func(a, b ManagerUse) int {
		if a.Version != b.Version {
			if stages.Newer(a.Version, b.Version) {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(b.Objects, a.Objects), cmp.Compare(a.Manager, b.Manager), cmp.Compare(a.Operation, b.Operation))
	})
	return out
}

// CRDUsage is what Usage found for one CRD.
type CRDUsage struct {
	CRD *apiextensionsv1.CustomResourceDefinition
	// Requests holds the versions the deprecated-API metric names.
	Requests map[string]VersionRequests
	// Own holds those this plugin's own recorded requests account for (OwnRecords.Own).
	Own      map[string]OwnUse
	Managers *ManagerCount
}

// Result answers "who still uses these versions?" for some CRDs.
type Result struct {
	Metrics *DeprecatedAPIs
	CRDs    []CRDUsage
}

// Read reads the deprecated-API metric once, before counting each CRD's field managers: this
// command's own lists at a deprecated version would set it. own are the plugin's records.
func Read(ctx context.Context, metricsClient rest.Interface, meta metadata.Interface, crds []*apiextensionsv1.CustomResourceDefinition, pageSize int64, own OwnRecords) (*Result, error) {
	m, err := DeprecatedRequests(ctx, metricsClient)
	if err != nil {
		return nil, err
	}
	out := &Result{Metrics: m}
	for _, crd := range crds {
		managers, err := FieldManagers(ctx, meta, crd, pageSize)
		if err != nil {
			return nil, err
		}
		out.CRDs = append(out.CRDs, CRDUsage{CRD: crd, Requests: m.ForCRD(crd), Own: own.Own(crd, m), Managers: managers})
	}
	return out, nil
}
