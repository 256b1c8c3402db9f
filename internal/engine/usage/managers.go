package usage

import (
	"context"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/metadata"
)

// VersionManagers counts, per version, the managers whose last write used it, and on how many
// objects: the clients still writing it.
func VersionManagers(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, versions []string, pageSize int64) (map[string]map[string]int64, error) {
	found, err := FieldManagers(ctx, meta, crd, pageSize)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]int64{}
	for _, u := range found.Managers {
		if !slices.Contains(versions, u.Version) {
			continue
		}
		if out[u.Version] == nil {
			out[u.Version] = map[string]int64{}
		}
		out[u.Version][u.Manager] += u.Objects
	}
	return out, nil
}
