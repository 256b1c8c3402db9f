package migrate

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/internal/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
)

// lossFound is an object whose check showed that old→new→old does not keep
// it: it is not re-stored.
type lossFound struct{ Loss }

func (l lossFound) Error() string {
	return fmt.Sprintf("%s/%s does not come back intact from %s→storage→%s", l.Namespace, l.Name, l.Version, l.Version)
}

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
func checkedRestore(ctx context.Context, meta metadata.Interface, dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition, versions []string, all bool, checked *atomic.Int64, opts RestoreOptions) *RestoreResult {
	at := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: crd.Spec.Group, Version: v, Resource: crd.Spec.Names.Plural}
	}
	schemas := make([]*apiextensionsv1.JSONSchemaProps, len(versions))
	for i, v := range versions {
		schemas[i] = schemaOf(crd, v)
	}
	write := func(ctx context.Context, ri metadata.ResourceInterface, gr schema.GroupResource, it item, opts RestoreOptions) (outcome, error) {
		for range maxRechecks {
			out, err := checkObject(ctx, dyn, at, versions, schemas, gr, it, opts)
			switch {
			case out == outcomeGone || err != nil:
				return out, err
			case out == outcomeNotAtOld && all:
				checked.Add(1)
				return out, nil
			}
			if out != outcomeConflicted {
				// Read at an old version, labels and annotations may differ
				// by conversion; the dry run compared them.
				out, err := restoreAt(ctx, ri, gr, it, opts, false)
				if out != outcomeConflicted {
					checked.Add(1)
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
		return 0, fmt.Errorf("written by someone else %d times between its check and its re-store: not re-stored, run again", maxRechecks)
	}
	return forEachObject(ctx, meta, crd, wholeObjects(dyn, meta, at(versions[0]), lifecycle.StorageVersion(crd)), opts, write)
}

// checkObject sends the object back at each version as a dry run. It
// answers outcomeGone (deleted), outcomeConflicted (written since it was
// read: check it again), outcomeNotAtOld (the converter will not express
// it at any of versions), a lossFound, another error, or 0: it
// round-trips at every version that shows it.
func checkObject(ctx context.Context, dyn dynamic.Interface, at func(string) schema.GroupVersionResource, versions []string, schemas []*apiextensionsv1.JSONSchemaProps, gr schema.GroupResource, it item, opts RestoreOptions) (outcome, error) {
	shown := 0
	for i, v := range versions {
		r := dyn.Resource(at(v)).Namespace(it.Namespace)
		obj := it.obj
		if i > 0 || obj == nil {
			var err error
			obj, err = readAt(ctx, r, it.Name, opts)
			switch {
			case objectGone(err, gr, it.Name):
				return outcomeGone, nil
			case pass.IsConversionFailure(err):
				// A read at an object's stored version never converts: the
				// converter was asked, so the object is not stored at v,
				// and nothing of it at v can be lost.
				continue
			case err != nil:
				return 0, err
			case obj.GetResourceVersion() != it.ResourceVersion:
				return outcomeConflicted, nil
			}
		}
		shown++
		var diffs []FieldDiff
		err := opts.run.Attempt(ctx, func(wctx context.Context) (err error) {
			diffs, err = sendBack(wctx, r, obj, schemas[i])
			return err
		})
		switch {
		case objectGone(err, gr, it.Name):
			return outcomeGone, nil
		case realConflict(err, gr, it.Name):
			return outcomeConflicted, nil
		case err != nil:
			return 0, err
		case len(diffs) > 0:
			return 0, lossFound{Loss{Namespace: it.Namespace, Name: it.Name, Version: v, Diffs: diffs}}
		}
	}
	if shown == 0 {
		return outcomeNotAtOld, nil
	}
	return 0, nil
}

// sendBack sends obj, as read, back unchanged as a server-side dry-run
// update at its own version, with its resourceVersion as the precondition:
// the API server converts it to the storage version and back, and nothing
// is persisted. It returns every field the answer does not have as read.
func sendBack(ctx context.Context, r dynamic.ResourceInterface, obj *unstructured.Unstructured, s *apiextensionsv1.JSONSchemaProps) ([]FieldDiff, error) {
	back, err := r.Update(ctx, obj, DryRunServer.updateOptions(""))
	if err != nil {
		return nil, err
	}
	return lifecycle.DiffFields("", comparable(obj), comparable(back), s), nil
}

// readAt reads the object anew, with the pass's retries.
func readAt(ctx context.Context, r dynamic.ResourceInterface, name string, opts RestoreOptions) (*unstructured.Unstructured, error) {
	var obj *unstructured.Unstructured
	err := opts.run.Attempt(ctx, func(wctx context.Context) (err error) {
		obj, err = r.Get(wctx, name, metav1.GetOptions{})
		return err
	})
	return obj, err
}
