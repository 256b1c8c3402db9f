package verify

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// Outcome is how one object's check (ObjectCheck) went, where it found no loss.
type Outcome int

const (
	// Intact: the object round-trips at every version that shows it.
	Intact Outcome = iota
	// Gone: deleted since it was listed.
	Gone
	// Conflicted: written since it was read: check it again.
	Conflicted
	// NotStored: the converter will not express it at any version checked: stored at none.
	NotStored
)

// LossFound is an object old→new→old does not keep (ObjectCheck): it is not re-stored.
type LossFound struct{ results.Loss }

func (l LossFound) Error() string {
	return fmt.Sprintf("%s/%s does not come back intact from %s→storage→%s", l.Namespace, l.Name, l.Version, l.Version)
}

// Retrier sends a request with the re-store pass's retries, so a check shares its limit.
type Retrier interface {
	Attempt(ctx context.Context, request func(context.Context) error) error
}

// ObjectCheck checks a CRD's objects before each is re-stored, by dry runs at each version.
type ObjectCheck struct {
	dyn      dynamic.Interface
	resource schema.GroupResource
	versions []string
	schemas  []*apiextensionsv1.JSONSchemaProps
	// storage is the storage version's schema: its defaults fill fields in on the way.
	storage *apiextensionsv1.JSONSchemaProps
}

// NewObjectCheck checks crd's objects at versions, the old ones they may be stored at.
func NewObjectCheck(dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition, versions []string) ObjectCheck {
	c := ObjectCheck{dyn: dyn, resource: schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}, versions: versions,
		storage: schemacompat.SchemaOf(crd, stages.StorageVersion(crd))}
	for _, v := range versions {
		c.schemas = append(c.schemas, schemacompat.SchemaOf(crd, v))
	}
	return c
}

// Check sends one object back at each version as a dry run through r: listed is its
// metadata, obj the object at the first version (nil: read it). See Outcome and LossFound.
func (c ObjectCheck) Check(ctx context.Context, r Retrier, listed *metav1.ObjectMeta, obj *unstructured.Unstructured) (Outcome, error) {
	gr := c.resource
	shown := 0
	for i, v := range c.versions {
		ri := c.dyn.Resource(gr.WithVersion(v)).Namespace(listed.Namespace)
		if i > 0 || obj == nil {
			var err error
			obj, err = readAt(ctx, r, ri, listed.Name)
			switch {
			case pass.ObjectGone(err, gr, listed.Name):
				return Gone, nil
			case pass.IsConversionFailure(err):
				// A read at the stored version never converts: not stored at v, nothing to lose.
				continue
			case err != nil:
				return 0, err
			case obj.GetResourceVersion() != listed.ResourceVersion:
				return Conflicted, nil
			}
		}
		shown++
		var diffs []results.FieldDiff
		err := r.Attempt(ctx, func(wctx context.Context) (err error) {
			diffs, err = sendBack(wctx, ri, obj, c.schemas[i], c.storage)
			return err
		})
		switch {
		case pass.ObjectGone(err, gr, listed.Name):
			return Gone, nil
		case pass.RealConflict(err, gr, listed.Name):
			return Conflicted, nil
		case err != nil:
			return 0, err
		case len(diffs) > 0:
			return 0, LossFound{results.Loss{Namespace: listed.Namespace, Name: listed.Name, Version: v, Diffs: diffs}}
		}
	}
	if shown == 0 {
		return NotStored, nil
	}
	return Intact, nil
}

// sendBack sends obj back unchanged as a dry-run update at its version, preconditioned on
// its resourceVersion, and returns every value the answer lost. at is the schema of obj's
// version, storage the storage version's: a field either defaults, absent as read and back
// with that default, is added, not lost (schemacompat.RoundTripDiff).
func sendBack(ctx context.Context, r dynamic.ResourceInterface, obj *unstructured.Unstructured, at, storage *apiextensionsv1.JSONSchemaProps) ([]results.FieldDiff, error) {
	back, err := r.Update(ctx, obj, metav1.UpdateOptions{FieldManager: cluster.FieldManager, DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return nil, err
	}
	return schemacompat.RoundTripDiff(comparable(obj), comparable(back), at, storage).Lost, nil
}

func readAt(ctx context.Context, r Retrier, ri dynamic.ResourceInterface, name string) (*unstructured.Unstructured, error) {
	var obj *unstructured.Unstructured
	err := r.Attempt(ctx, func(wctx context.Context) (err error) {
		obj, err = ri.Get(wctx, name, metav1.GetOptions{})
		return err
	})
	return obj, err
}
