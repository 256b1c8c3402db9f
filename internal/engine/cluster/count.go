package cluster

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
)

// CountObjects counts the CRD's objects without listing them: a metadata list of one item
// gives remainingItemCount. ok is false when no version is served.
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

// ServedResource is the resource to read the CRD's objects through (stages.ListVersion):
// served and not deprecated, so the deprecated-API metric counts no read.
func ServedResource(crd *apiextensionsv1.CustomResourceDefinition) (schema.GroupVersionResource, bool) {
	v := stages.ListVersion(crd)
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: v, Resource: crd.Spec.Names.Plural}, v != ""
}
