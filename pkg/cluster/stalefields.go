package cluster

import (
	"context"
	"errors"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// StaleEntry reports a managedFields entry recorded at a version of the
// CRD's group that the CRD does not serve (unserved, or removed): server-side
// apply fails on such an entry once its version is gone (kubernetes#111937).
func StaleEntry(crd *apiextensionsv1.CustomResourceDefinition) func(metav1.ManagedFieldsEntry) bool {
	served := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served[crd.Spec.Group+"/"+v.Name] = true
		}
	}
	return func(mf metav1.ManagedFieldsEntry) bool {
		gv, err := schema.ParseGroupVersion(mf.APIVersion)
		return err == nil && gv.Group == crd.Spec.Group && !served[mf.APIVersion]
	}
}

var errFound = errors.New("found")

// HasStaleEntries reports whether any object of the CRD carries a StaleEntry;
// it lists a page at a time and stops at the first object that does.
func HasStaleEntries(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, pageSize int64) (bool, error) {
	n, err := countStale(ctx, meta, crd, pageSize, 1)
	return n > 0, err
}

// CountStale counts the objects of the CRD that carry a StaleEntry.
func CountStale(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, pageSize int64) (int64, error) {
	return countStale(ctx, meta, crd, pageSize, -1)
}

// countStale counts up to limit objects with a StaleEntry (-1: all).
func countStale(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, pageSize, limit int64) (int64, error) {
	stale := StaleEntry(crd)
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: lifecycle.StorageVersion(crd), Resource: crd.Spec.Names.Plural}
	var n int64
	_, err := ListPages(ctx, meta, gvr, pageSize, func(p Page) error {
		for _, o := range p.Items {
			if slices.ContainsFunc(o.ManagedFields, stale) {
				if n++; n == limit {
					return errFound
				}
			}
		}
		return nil
	})
	if errors.Is(err, errFound) {
		err = nil
	}
	return n, err
}
