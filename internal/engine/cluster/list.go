package cluster

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ListCRDs lists the CRDs matching selector in one call: they are too few for paging to pay.
func ListCRDs(ctx context.Context, client apiextensionsclient.Interface, selector string) ([]apiextensionsv1.CustomResourceDefinition, error) {
	list, err := client.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing CustomResourceDefinitions: %w", err)
	}
	return list.Items, nil
}
