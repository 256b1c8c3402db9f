package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// StaleEntry reports a managedFields entry at a version of the CRD's group it does not serve:
// server-side apply fails on such an entry once its version is gone (kubernetes#111937).
func StaleEntry(crd *apiextensionsv1.CustomResourceDefinition) func(metav1.ManagedFieldsEntry) bool {
	stale := StaleVersion(crd)
	return func(mf metav1.ManagedFieldsEntry) bool {
		_, ok := stale(mf)
		return ok
	}
}

// StaleVersion is StaleEntry, naming the version of a stale entry.
func StaleVersion(crd *apiextensionsv1.CustomResourceDefinition) func(metav1.ManagedFieldsEntry) (string, bool) {
	served := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served[crd.Spec.Group+"/"+v.Name] = true
		}
	}
	return func(mf metav1.ManagedFieldsEntry) (string, bool) {
		gv, err := schema.ParseGroupVersion(mf.APIVersion)
		if err != nil || gv.Group != crd.Spec.Group || served[mf.APIVersion] {
			return "", false
		}
		return gv.Version, true
	}
}

// Entries is what ObjectsWithEntries found.
type Entries struct {
	// Listed counts the objects listed; -1 when a continue token expired (some listed twice).
	Listed int64
	// Objects have an entry picked (namespace/name), each once; Versions those entries name.
	Objects  []string
	Versions []string
}

// ObjectsWithEntries lists gvr's metadata and finds the objects with an entry pick picks.
func ObjectsWithEntries(ctx context.Context, meta metadata.Interface, gvr schema.GroupVersionResource, pageSize int64, pick func(metav1.ManagedFieldsEntry) (string, bool)) (Entries, error) {
	var out Entries
	seen := map[string]bool{}
	expired, err := ListPages(ctx, meta, gvr, pageSize, func(p Page) error {
		out.Listed += int64(len(p.Items))
		for _, o := range p.Items {
			found := false
			for _, mf := range o.ManagedFields {
				if v, ok := pick(mf); ok {
					found = true
					if !slices.Contains(out.Versions, v) {
						out.Versions = append(out.Versions, v)
					}
				}
			}
			name := o.Name
			if o.Namespace != "" {
				name = o.Namespace + "/" + name
			}
			if found && !seen[name] {
				seen[name] = true
				out.Objects = append(out.Objects, name)
			}
		}
		return nil
	})
	if expired > 0 {
		out.Listed = -1
	}
	return out, err
}

// staleNamed is how many objects a StaleManagedFields names.
const staleNamed = 3

// StaleManagedFields lists the CRD's metadata at ListVersion (no conversion, nothing the
// deprecated-API metric counts) and says which objects carry a StaleEntry (nil: none).
// listed is -1 when nothing could be listed (no version served) or a token expired.
func StaleManagedFields(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, pageSize int64) (stale *lifecycle.StaleManagedFields, listed int64, err error) {
	gvr, ok := ServedResource(crd)
	if !ok {
		return nil, -1, nil
	}
	found, err := ObjectsWithEntries(ctx, meta, gvr, pageSize, StaleVersion(crd))
	if NotServedYet(crd, err) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, -1, fmt.Errorf("listing the objects of %s: %w", crd.Name, err)
	}
	if len(found.Objects) == 0 {
		return nil, found.Listed, nil
	}
	removed, unserved := stages.StaleVersions(crd, found.Versions)
	return &lifecycle.StaleManagedFields{Objects: int64(len(found.Objects)), First: found.Objects[:min(len(found.Objects), staleNamed)],
		Removed: removed, Unserved: unserved}, found.Listed, nil
}

var errFound = errors.New("found")

// HasStaleEntries reports whether any object carries a StaleEntry, stopping at the first.
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
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: stages.StorageVersion(crd), Resource: crd.Spec.Names.Plural}
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

// NotServedYet tells a list refused because the CRD is not established yet: the server
// serves none of its objects, and none was ever written.
func NotServedYet(crd *apiextensionsv1.CustomResourceDefinition, err error) bool {
	if !apierrors.IsNotFound(err) {
		return false
	}
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status != apiextensionsv1.ConditionTrue
		}
	}
	return true
}
