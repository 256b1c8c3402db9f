package migrate

import (
	"context"
	"fmt"
	"sync/atomic"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// CleanManagedFields moves, on every object of the CRD, the managedFields
// entries recorded at a version the CRD no longer serves to the storage
// version, or drops them (entriesCleaner): server-side apply fails on them
// once that version is removed ("request to convert CR to an invalid
// group/version", kubernetes#111937). Each object is patched with a
// resourceVersion precondition; on a conflict it is read again and the
// entries recomputed, never written over someone else's change.
//
// Moving entries is a write, and every write re-encodes its object at the
// storage version. So this writes only where the CRD proves that keeps every
// object: storedVersions names no other version, or the schemas prove
// old→new→old for each one it names. Elsewhere it writes nothing and says
// so (StopNotProven): Migrate with CleanManagedFields cleans the entries in
// the re-store it checks for each object.
func CleanManagedFields(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, opts RestoreOptions) *results.RestoreResult {
	return cleanManagedFields(ctx, meta, crd, restoreRun{RestoreOptions: opts})
}

func cleanManagedFields(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, run restoreRun) *results.RestoreResult {
	if why := unprovenStored(crd); why != "" {
		return &results.RestoreResult{Failures: []results.Failure{}, StopReason: results.StopNotProven, Stopped: why}
	}
	run.clean, run.cleaned = entriesCleaner(crd), &atomic.Int64{}
	return forEachObject(ctx, meta, crd, addresses(meta, storageGVR(crd)), run, func(ctx context.Context, ri metadata.ResourceInterface, gr schema.GroupResource, it item, opts restoreRun) (outcome, error) {
		if !opts.cleans(it) {
			return outcomeUnchanged, nil
		}
		return restoreOne(ctx, ri, gr, it, opts)
	})
}

// unprovenStored says why the CRD alone does not prove that a write at the
// storage version keeps every object, or "".
func unprovenStored(crd *apiextensionsv1.CustomResourceDefinition) string {
	storage := lifecycle.StorageVersion(crd)
	for _, v := range crd.Status.StoredVersions {
		if v == storage {
			continue
		}
		if ok, why := schemacompat.SchemaProof(crd, v, storage); !ok {
			return fmt.Sprintf("nothing was written: objects may be stored at %s, and the schemas do not prove that a write at %s keeps them (%s); the migration cleans the entries as it re-stores each object, checked", v, storage, why)
		}
	}
	return ""
}

// cleanSummary is what a migration that cleaned as it re-stored did to
// managedFields: the objects it cleaned, and those that still carry entries
// at unserved versions once it is over, counted on the cluster (objects the
// checks left alone among them). A dry run persists nothing to count.
func cleanSummary(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, opts restoreRun, res *results.RestoreResult) *results.RestoreResult {
	mf := &results.RestoreResult{Failures: []results.Failure{}, Listed: res.Listed, Rewritten: opts.cleaned.Load()}
	if opts.DryRun.persists() {
		left, err := cluster.CountStale(ctx, meta, crd, opts.PageSize)
		if err != nil {
			mf.StopReason, mf.Stopped = results.StopListFailed, "counting the objects left with entries at unserved versions: "+err.Error()
		}
		mf.Failed = left
	}
	mf.Unchanged = max(0, res.Listed-mf.Rewritten-mf.Failed)
	return mf
}

// entriesCleaner makes the managedFields a write leaves on an object, and
// says whether they differ from those it had. An entry at a version the CRD
// still lists but no longer serves moves to the storage version, into the
// entry its manager already has there, so that its manager still owns its
// fields and its next apply can drop one: until the version is removed the
// API server records every writer's fields, so the entry is up to date. It
// holds where no webhook converts: every version names a field by the same
// path. An entry at a removed version is dropped: other writers' fields
// went unrecorded since, and moving it would hand them to its manager. So
// is one a webhook's conversion may name by other paths.
func entriesCleaner(crd *apiextensionsv1.CustomResourceDefinition) func([]metav1.ManagedFieldsEntry) ([]metav1.ManagedFieldsEntry, bool) {
	stale := cluster.StaleVersion(crd)
	storage := crd.Spec.Group + "/" + lifecycle.StorageVersion(crd)
	webhook := crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter
	return func(entries []metav1.ManagedFieldsEntry) ([]metav1.ManagedFieldsEntry, bool) {
		out := make([]metav1.ManagedFieldsEntry, 0, len(entries))
		var moved []metav1.ManagedFieldsEntry
		changed := false
		for _, e := range entries {
			v, isStale := stale(e)
			switch {
			case !isStale || e.APIVersion == storage: // an unserved storage version's entries are where they would go
				out = append(out, e)
			case !webhook && lifecycle.SpecVersion(crd, v) != nil:
				changed = true
				e.APIVersion = storage
				moved = append(moved, e)
			default:
				changed = true
			}
		}
		for _, e := range moved {
			out = mergeEntry(out, e)
		}
		return out, changed
	}
}

// mergeEntry adds e to entries, into the entry of the same key if there is
// one (the API server keeps one a key): their fields joined, the later time
// kept. An entry whose fields do not parse is left out, as where a webhook
// converts.
func mergeEntry(entries []metav1.ManagedFieldsEntry, e metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	for i, have := range entries {
		if !sameEntry(have, e) {
			continue
		}
		a, aerr := fieldSet(have)
		b, berr := fieldSet(e)
		if aerr != nil || berr != nil {
			return entries
		}
		raw, err := a.Union(b).ToJSON()
		if err != nil {
			return entries
		}
		have.FieldsType, have.FieldsV1 = "FieldsV1", metav1.NewFieldsV1(string(raw))
		if e.Time != nil && (have.Time == nil || have.Time.Before(e.Time)) {
			have.Time = e.Time
		}
		entries[i] = have
		return entries
	}
	return append(entries, e)
}

// managedFieldsValue is what a merge patch sets managedFields to. An empty
// list would mean "leave them alone" to the API server; one empty entry is
// how to clear them.
func managedFieldsValue(keep []metav1.ManagedFieldsEntry) any {
	if len(keep) == 0 {
		return []map[string]any{{}}
	}
	return keep
}
