package migrate

import (
	"context"
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/cluster"
)

// CleanManagedFields drops, from every object of the CRD, the managedFields
// entries recorded at a version the CRD no longer serves: server-side apply
// fails on them once that version is removed ("request to convert CR to an
// invalid group/version", kubernetes#111937). Each object is patched with a
// resourceVersion precondition; on a conflict it is read again and the
// entries recomputed, never written over someone else's change.
func CleanManagedFields(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, opts RestoreOptions) *RestoreResult {
	stale := cluster.StaleEntry(crd)
	return forEachObject(ctx, meta, crd, addresses(meta, storageGVR(crd)), opts, func(ctx context.Context, ri metadata.ResourceInterface, gr schema.GroupResource, it item, opts RestoreOptions) (outcome, error) {
		for range maxReplans {
			keep, changed := filterEntries(it.ManagedFields, stale)
			if !changed {
				return outcomeUnchanged, nil
			}
			patch, err := managedFieldsPatch(it.ResourceVersion, keep)
			if err != nil {
				return 0, err
			}
			out, got, err := withRetries(ctx, opts, gr, it, func(wctx context.Context) (*metav1.PartialObjectMetadata, error) {
				return ri.Patch(wctx, it.Name, types.MergePatchType, patch, patchOptions(opts))
			})
			if err != nil || out == outcomeGone {
				return out, err
			}
			if out != outcomeConflicted {
				// The API server puts the old entries back when its field
				// manager fails on the new ones: only the answer tells.
				if left, _ := filterEntries(got.ManagedFields, stale); len(left) != len(got.ManagedFields) {
					return 0, fmt.Errorf("the API server kept %d managedFields entries at unserved versions", len(got.ManagedFields)-len(left))
				}
				return out, nil
			}
			fresh, err := ri.Get(ctx, it.Name, metav1.GetOptions{})
			if objectGone(err, gr, it.Name) {
				return outcomeGone, nil
			}
			if err != nil {
				return 0, err
			}
			it = item{ObjectMeta: fresh.ObjectMeta}
		}
		return 0, fmt.Errorf("%s kept changing: managedFields not cleaned", it.Name)
	})
}

func filterEntries(entries []metav1.ManagedFieldsEntry, stale func(metav1.ManagedFieldsEntry) bool) ([]metav1.ManagedFieldsEntry, bool) {
	keep := make([]metav1.ManagedFieldsEntry, 0, len(entries))
	for _, mf := range entries {
		if !stale(mf) {
			keep = append(keep, mf)
		}
	}
	return keep, len(keep) != len(entries)
}

// managedFieldsPatch sets managedFields under a resourceVersion
// precondition. An empty list would mean "leave them alone" to the API
// server; one empty entry is how to clear them.
func managedFieldsPatch(rv string, keep []metav1.ManagedFieldsEntry) ([]byte, error) {
	var entries any = keep
	if len(keep) == 0 {
		entries = []map[string]any{{}}
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": rv, "managedFields": entries}})
}
