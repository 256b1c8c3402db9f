package migration

import (
	"context"
	"fmt"
	"sync/atomic"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// maxRechecks bounds the re-checks of an object written between check and re-store.
const maxRechecks = 5

// checkedRestore re-stores every object only once old→new→old is shown for
// it as written: read at each of versions, sent back there as a server-side
// dry run (through the API server's own conversion, a webhook included) and
// compared, then re-stored with the checked resourceVersion as precondition,
// so a write in between is a conflict and a new check. An object that loses
// data is not written; one the converter expresses at none of versions is
// stored at none, and where those are all old versions (all) is not written.
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
				// Read at an old version, labels may differ by conversion; the dry run compared them.
				out, err := restoreAt(ctx, ri, gr, it, opts, false)
				if out != outcomeConflicted {
					markChecked(opts)
					return out, err
				}
			}
			var gone bool
			if it, gone, err = readAnew(ctx, ri, gr, it.Name); gone {
				return outcomeGone, nil
			} else if err != nil {
				return 0, err
			}
		}
		return 0, fmt.Errorf("written by someone else %d times between its check and its re-store: not re-stored", maxRechecks)
	}
	return forEachObject(ctx, meta, crd, wholeObjects(dyn, meta, schema.GroupVersionResource{Group: crd.Spec.Group, Version: versions[0], Resource: crd.Spec.Names.Plural}, stages.StorageVersion(crd)), opts, write)
}
