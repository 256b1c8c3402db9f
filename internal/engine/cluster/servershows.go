package cluster

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/transport"
)

// StorageVersionHash asks the API server behind route (its own discovery) for plural's
// storageVersionHash in group/version; "" where it lists none.
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

// CRDAsServed asks the API server behind route for the CRD as its watch cache holds it
// (resourceVersion=0): the generation it has seen, which its object handler follows within
// moments; storageVersionHash changes with the storage version only.
func (c Clients) CRDAsServed(ctx context.Context, route *transport.Route, name string) (*metav1.PartialObjectMetadata, error) {
	if c.objectsREST == nil {
		return nil, transport.ErrNoRoutes
	}
	raw, err := c.objectsREST.Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", name).
		Param("resourceVersion", "0").
		// Its metadata only: a CRD's schemas can be megabytes.
		SetHeader("Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json").
		Do(transport.WithRoute(ctx, route)).Raw()
	if err != nil {
		return nil, err
	}
	var m metav1.PartialObjectMetadata
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return &m, nil
}
