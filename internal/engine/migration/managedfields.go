package migration

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// CleanManagedFields moves or drops, on every object, managedFields entries at
// versions the CRD no longer serves: server-side apply fails on them once the
// version is removed (kubernetes#111937). Each patch has a resourceVersion
// precondition, and as any write re-encodes, it writes only where the CRD
// proves that keeps every object (else StopNotProven: Migrate cleans instead).
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

// unprovenStored says why the CRD does not prove a write keeps every object, or "".
func unprovenStored(crd *apiextensionsv1.CustomResourceDefinition) string {
	storage := stages.StorageVersion(crd)
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

// cleanSummary is what a migration's cleanup did: objects cleaned, and those
// still carrying stale entries afterwards, counted on the cluster.
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

// entriesCleaner makes the managedFields a write leaves, and whether they
// changed. An entry at a version listed but unserved, or served and named in
// also (a version a release removes, which the plugin cannot stop serving
// first), moves to the storage version, so its manager keeps its fields,
// unless a webhook converts (other paths). One at a removed version is
// dropped: moving it would hand its manager fields others wrote since,
// unrecorded.
func entriesCleaner(crd *apiextensionsv1.CustomResourceDefinition, also ...string) func([]metav1.ManagedFieldsEntry) ([]metav1.ManagedFieldsEntry, bool) {
	unserved := cluster.StaleVersion(crd)
	stale := func(e metav1.ManagedFieldsEntry) (string, bool) {
		if v, ok := unserved(e); ok {
			return v, true
		}
		gv, err := schema.ParseGroupVersion(e.APIVersion)
		if err != nil || gv.Group != crd.Spec.Group || !slices.Contains(also, gv.Version) {
			return "", false
		}
		return gv.Version, true
	}
	storage := crd.Spec.Group + "/" + stages.StorageVersion(crd)
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
			case !webhook && stages.SpecVersion(crd, v) != nil:
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

// mergeEntry adds e into entries' entry of the same key, if any (the API
// server keeps one a key), fields joined and the later time kept.
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

// managedFieldsValue is what a merge patch sets managedFields to: an empty
// list would leave them alone, one empty entry clears them.
func managedFieldsValue(keep []metav1.ManagedFieldsEntry) any {
	if len(keep) == 0 {
		return []map[string]any{{}}
	}
	return keep
}
