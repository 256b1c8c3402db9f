package migrate

import (
	"context"
	"fmt"
	"sync/atomic"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// maxRechecks bounds how often one object is checked again because someone
// wrote it between its check and its re-store.
const maxRechecks = 5

// checkedRestore re-stores every object of the CRD, each only once
// old→new→old is shown for that object as it is written: the object is
// read at each version in versions (the old versions the schemas do not
// prove, or the served versions that show an unserved one), sent back
// there as a server-side dry run (with the storage switch in effect,
// exactly old→new→old through the API server's own conversion path, a
// webhook included) and compared; then the re-store is written with the
// resourceVersion the check read as its precondition. A write by anyone in
// between is a conflict, and the object is read and checked again: the
// check is about the object the re-store writes, never an earlier one. An
// object that loses data is not written (onLoss hears it). An object the
// converter will not express at any of versions is not stored at any of
// them; where those are every old version in storedVersions (all, says so)
// it is stored at the storage version already, and is not written. Two
// requests an object, one slot of the pass's gate for both.
func checkedRestore(ctx context.Context, meta metadata.Interface, dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition, versions []string, all bool, checked *atomic.Int64, opts restoreRun) *results.RestoreResult {
	opts.checked = checked
	check := verify.NewObjectCheck(dyn, crd, versions)
	write := func(ctx context.Context, ri metadata.ResourceInterface, gr schema.GroupResource, it item, opts restoreRun) (outcome, error) {
		for range maxRechecks {
			found, err := check.Check(ctx, opts.run, &it.ObjectMeta, it.obj)
			switch {
			case err != nil:
				return 0, err
			case found == verify.Gone:
				return outcomeGone, nil
			case found == verify.NotStored && all:
				markChecked(opts)
				return outcomeNotAtOld, nil
			}
			if found != verify.Conflicted {
				// Read at an old version, labels and annotations may differ
				// by conversion; the dry run compared them.
				out, err := restoreAt(ctx, ri, gr, it, opts, false)
				if out != outcomeConflicted {
					markChecked(opts)
					return out, err
				}
			}
			// The check reads it at each version again.
			var gone bool
			if it, gone, err = readAnew(ctx, ri, gr, it.Name); gone {
				return outcomeGone, nil
			} else if err != nil {
				return 0, err
			}
		}
		return 0, fmt.Errorf("written by someone else %d times between its check and its re-store: not re-stored", maxRechecks)
	}
	return forEachObject(ctx, meta, crd, wholeObjects(dyn, meta, schema.GroupVersionResource{Group: crd.Spec.Group, Version: versions[0], Resource: crd.Spec.Names.Plural}, lifecycle.StorageVersion(crd)), opts, write)
}
