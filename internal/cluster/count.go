package cluster

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// CountObjects returns how many objects of the CRD exist, across all
// namespaces, without listing them: a metadata-only list of one item whose
// remainingItemCount the API server computes from etcd. ok is false when no
// version is served (nothing can be listed).
func CountObjects(ctx context.Context, client metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition) (n int64, ok bool, err error) {
	gvr, ok := ServedResource(crd)
	if !ok {
		return 0, false, nil
	}
	list, err := client.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, false, fmt.Errorf("counting %s: %w", crd.Name, err)
	}
	n = int64(len(list.Items))
	if list.RemainingItemCount != nil {
		n += *list.RemainingItemCount
	}
	return n, true, nil
}

// ServedResource picks the resource to read the CRD's objects through
// (lifecycle.ListVersion): a served version not deprecated, so that the
// read is no request the deprecated-API metric counts, the storage version
// first (no conversion).
func ServedResource(crd *apiextensionsv1.CustomResourceDefinition) (schema.GroupVersionResource, bool) {
	v := lifecycle.ListVersion(crd)
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: v, Resource: crd.Spec.Names.Plural}, v != ""
}
