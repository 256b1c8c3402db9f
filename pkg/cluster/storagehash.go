package cluster

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/transport"
)

// StorageVersionHash asks the API server behind route (its own discovery,
// on the connection the route keeps to) for the storageVersionHash it
// publishes for plural in group/version; "" where it does not list it.
func (c Clients) StorageVersionHash(ctx context.Context, route *transport.Route, group, version, plural string) (string, error) {
	if c.objectsREST == nil {
		return "", transport.ErrNoRoutes
	}
	raw, err := c.objectsREST.Get().AbsPath("/apis", group, version).Do(transport.WithRoute(ctx, route)).Raw()
	if err != nil {
		return "", err
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", err
	}
	for _, res := range list.APIResources {
		if res.Name == plural {
			return res.StorageVersionHash, nil
		}
	}
	return "", nil
}
