package cluster

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var endpointSlices = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}

// APIServers counts the ready endpoints of the default kubernetes service, where each API
// server publishes its address; a provider's load balancer there counts 1. An error (often
// forbidden: the list needs RBAC in namespace default) says nothing.
func APIServers(ctx context.Context, dyn dynamic.Interface) (int, error) {
	list, err := dyn.Resource(endpointSlices).Namespace(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kubernetes"})
	if err != nil {
		return 0, err
	}
	addrs := map[string]bool{}
	for _, s := range list.Items {
		eps, _, _ := unstructured.NestedSlice(s.Object, "endpoints")
		for _, e := range eps {
			ep, ok := e.(map[string]any)
			if !ok {
				continue
			}
			if ready, found, _ := unstructured.NestedBool(ep, "conditions", "ready"); found && !ready {
				continue
			}
			as, _, _ := unstructured.NestedStringSlice(ep, "addresses")
			for _, a := range as {
				addrs[a] = true
			}
		}
	}
	return len(addrs), nil
}
