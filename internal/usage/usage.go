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

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// systemManagers write to every resource for the cluster's own reasons, so
// their managedFields entries say nothing about which clients use a version.
var systemManagers = map[string]bool{
	// Every kube-controller-manager controller that names no field manager,
	// the garbage collector's ownerReference and finalizer patches among
	// them: the API server takes the User-Agent up to its first "/"
	// (k8s.io/apiserver endpoints/handlers, prefixFromUserAgent).
	"kube-controller-manager": true,
	// The garbage collector's controller and service account name, should a
	// distribution pass it as the field manager.
	"generic-garbage-collector": true,
	// The in-tree StorageVersionMigration controller's re-stores (its
	// FieldManager is its controller name: kubernetes
	// cmd/kube-controller-manager/names, StorageVersionMigratorController).
	"storage-version-migrator-controller": true,
	// This plugin's re-stores and managedFields cleanups.
	cluster.FieldManager: true,
}

// IsSystemManager reports a field manager whose writes are the cluster's
// (or this plugin's) own, not a client's.
func IsSystemManager(name string) bool { return systemManagers[name] }

// ManagerUse counts the objects on which a field manager's last write with
// one operation (Apply or Update) used one version.
type ManagerUse struct {
	Manager   string
	Operation string
	Version   string
	Objects   int64
}

// ManagerCount is what FieldManagers found for one CRD.
type ManagerCount struct {
	// ListedAt is the version the objects were listed at; empty when no
	// version is served and nothing could be listed.
	ListedAt string
	Objects  int64
	// Managers are sorted by version, then most objects first.
	Managers []ManagerUse
}

type managerKey struct{ manager, operation, version string }

// FieldManagers lists the CRD's objects, metadata only, a page at a time,
// and counts for each version of the CRD the field managers whose last
// write to an object used it (a managedFields entry names it), system
// managers left out. A manager with entries for several subresources
// counts once per object.
func FieldManagers(ctx context.Context, client metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, pageSize int64) (*ManagerCount, error) {
	return FieldManagersSince(ctx, client, crd, pageSize, time.Time{})
}

// FieldManagersSince is FieldManagers counting only the writes made after
// since (an entry's time is its manager's last write, to the second: one
// in since's own second is taken as before it).
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

// ListVersion is the version to list at (lifecycle.ListVersion): one the
// CRD serves and does not deprecate, so the list itself is not a request
// the deprecated-API metric would count.
func ListVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	return lifecycle.ListVersion(crd)
}

// countManagers adds one page of objects to counts.
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
			if lifecycle.Newer(a.Version, b.Version) {
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
	// Own holds, of those, the versions this plugin's own recorded
	// requests account for on the API server that answered (OwnRecords.Own).
	Own      map[string]OwnUse
	Managers *ManagerCount
}

// Result answers "who still uses these versions?" for some CRDs.
type Result struct {
	Metrics *DeprecatedAPIs
	CRDs    []CRDUsage
}

// Read reads the deprecated-API metric once, then counts each CRD's field
// managers. The metric comes first so that this command's own lists cannot
// show up in it (a list at a deprecated version would set it). own are
// this plugin's records of its own requests (OwnRequests).
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
