package migration

import (
	"bytes"
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
)

// maxReturnTries bounds the re-reads when another writer moves the CRD.
const maxReturnTries = 5

// returnFields hands the fields a step's update took back to their earlier
// managers and lets go of those a manifest carries, so the owner's next apply
// meets no conflict (spec.versions is atomic). The update cannot: the API
// server gives every changed field to its manager; a second update can.
func returnFields(ctx context.Context, client apiextensionsclient.Interface, before, after *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, error) {
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	cur := after
	for try := 0; ; try++ {
		managed, changed, err := fieldsReturned(before.ManagedFields, cur.ManagedFields, cluster.FieldManager)
		if err != nil || !changed {
			return cur, err
		}
		sent := cur.DeepCopy()
		sent.ManagedFields = managed
		if len(managed) == 0 {
			// An empty list would keep what the server has: one empty entry clears them.
			sent.ManagedFields = []metav1.ManagedFieldsEntry{{}}
		}
		back, err := crds.Update(ctx, sent, metav1.UpdateOptions{FieldManager: cluster.FieldManager})
		switch {
		case err == nil:
			// Only the answer tells: a server may keep managedFields it could not decode.
			if _, still, err := fieldsReturned(before.ManagedFields, back.ManagedFields, cluster.FieldManager); err != nil || still {
				return back, fmt.Errorf("return spec fields of %s to their owners: the API server kept them the plugin's", after.Name)
			}
			return back, nil
		case !apierrors.IsConflict(err) || try == maxReturnTries:
			return cur, fmt.Errorf("return spec fields of %s to their owners: %w", after.Name, err)
		}
		if cur, err = crds.Get(ctx, after.Name, metav1.GetOptions{}); err != nil {
			return after, fmt.Errorf("return spec fields of %s to their owners: %w", after.Name, err)
		}
	}
}

// fieldsReturned computes managedFields in which self's update entry holds no
// field another manager held in before and none a manifest carries.
func fieldsReturned(before, now []metav1.ManagedFieldsEntry, self string) ([]metav1.ManagedFieldsEntry, bool, error) {
	mine := -1
	for i, e := range now {
		if e.Manager == self && e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "" {
			mine = i
		}
	}
	if mine < 0 {
		return now, false, nil
	}
	held, err := fieldSet(now[mine])
	if err != nil {
		return nil, false, err
	}
	out := make([]metav1.ManagedFieldsEntry, len(now))
	copy(out, now)
	let := fieldpath.NewSet()
	for _, prev := range before {
		if prev.Manager == self || prev.Subresource != "" {
			continue
		}
		had, err := fieldSet(prev)
		if err != nil {
			return nil, false, err
		}
		taken := held.Intersection(had)
		if taken.Empty() {
			continue
		}
		let = let.Union(taken)
		if err := giveTo(&out, prev, taken); err != nil {
			return nil, false, err
		}
	}
	for p := range held.All() {
		if carriedByManifests(p) {
			let.Insert(p)
		}
	}
	if let.Empty() {
		return now, false, nil
	}
	kept := held.Difference(let)
	if kept.Empty() {
		return append(out[:mine:mine], out[mine+1:]...), true, nil
	}
	raw, err := kept.ToJSON()
	if err != nil {
		return nil, false, err
	}
	out[mine].FieldsV1 = metav1.NewFieldsV1(string(raw))
	return out, true, nil
}

// giveTo adds fields to prev's entry in out, or puts prev's entry back.
func giveTo(out *[]metav1.ManagedFieldsEntry, prev metav1.ManagedFieldsEntry, fields *fieldpath.Set) error {
	for i, e := range *out {
		if !sameEntry(e, prev) {
			continue
		}
		has, err := fieldSet(e)
		if err != nil {
			return err
		}
		raw, err := has.Union(fields).ToJSON()
		if err != nil {
			return err
		}
		e.FieldsV1 = metav1.NewFieldsV1(string(raw))
		(*out)[i] = e
		return nil
	}
	raw, err := fields.ToJSON()
	if err != nil {
		return err
	}
	prev.FieldsV1 = metav1.NewFieldsV1(string(raw))
	*out = append(*out, prev)
	return nil
}

// sameEntry tells the API server's key of an entry: manager, operation,
// subresource, and for an update its apiVersion.
func sameEntry(a, b metav1.ManagedFieldsEntry) bool {
	return a.Manager == b.Manager && a.Operation == b.Operation && a.Subresource == b.Subresource &&
		(a.Operation == metav1.ManagedFieldsOperationApply || a.APIVersion == b.APIVersion)
}

// carriedByManifests says whether an owner's manifest may hold the field (the
// spec, the steps annotation): held by the plugin, it makes their apply conflict.
func carriedByManifests(p fieldpath.Path) bool {
	switch {
	case len(p) > 0 && isField(p[0], "spec"):
		return true
	case len(p) == 3 && isField(p[0], "metadata") && isField(p[1], "annotations") && isField(p[2], stages.StepsAnnotation):
		return true
	}
	return false
}

func isField(e fieldpath.PathElement, name string) bool {
	return e.FieldName != nil && *e.FieldName == name
}

func fieldSet(e metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	s := fieldpath.NewSet()
	if e.FieldsV1 == nil {
		return s, nil
	}
	if err := s.FromJSON(bytes.NewReader(e.FieldsV1.GetRawBytes())); err != nil {
		return nil, fmt.Errorf("read managedFields of %s: %w", e.Manager, err)
	}
	return s, nil
}
