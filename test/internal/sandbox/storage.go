package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// storagePrefix is where the API server keeps objects in etcd.
const storagePrefix = "/registry"

// Store reads what an API server keeps in etcd: the ground truth of what
// is stored, whichever API server (this sandbox's or a full one) wrote it.
type Store struct{ Client *clientv3.Client }

// StoredAPIVersion reads an object straight from etcd and returns the
// apiVersion it is stored at; namespace is "" for cluster-scoped objects.
func (s Store) StoredAPIVersion(ctx context.Context, group, resource, namespace, name string) (string, error) {
	key := path.Join(storagePrefix, group, resource, namespace, name)
	resp, err := s.Client.Get(ctx, key)
	if err != nil {
		return "", err
	}
	if len(resp.Kvs) == 0 {
		return "", fmt.Errorf("no etcd key %s", key)
	}
	return apiVersionOf(resp.Kvs[0].Value)
}

// StoredAPIVersions counts the resource's etcd keys by stored apiVersion,
// reading in pages so a large resource does not load at once.
func (s Store) StoredAPIVersions(ctx context.Context, group, resource string) (map[string]int, error) {
	prefix := path.Join(storagePrefix, group, resource) + "/"
	end := clientv3.GetPrefixRangeEnd(prefix)
	counts := map[string]int{}
	for key := prefix; ; {
		resp, err := s.Client.Get(ctx, key, clientv3.WithRange(end), clientv3.WithLimit(1000))
		if err != nil {
			return nil, err
		}
		for _, kv := range resp.Kvs {
			v, err := apiVersionOf(kv.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", kv.Key, err)
			}
			counts[v]++
		}
		if !resp.More {
			return counts, nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// Compact compacts etcd at its current revision, so continue tokens issued
// before expire.
func (s Store) Compact(ctx context.Context) error {
	resp, err := s.Client.Get(ctx, "compact-probe")
	if err != nil {
		return err
	}
	_, err = s.Client.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical())
	return err
}

func apiVersionOf(value []byte) (string, error) {
	var meta struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(value, &meta); err != nil {
		return "", fmt.Errorf("stored object is not JSON: %w", err)
	}
	return meta.APIVersion, nil
}

// CheckStoredVersions checks, from etcd alone, the promise a migration
// keeps: every key of the CRD's resource is stored at a version that the
// CRD's status.storedVersions names. It returns each violation.
func (s Store) CheckStoredVersions(ctx context.Context, crdName, group, resource string) ([]string, error) {
	key := path.Join(storagePrefix, "apiextensions.k8s.io", "customresourcedefinitions", crdName)
	resp, err := s.Client.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("no etcd key %s", key)
	}
	var crd struct {
		Status struct {
			StoredVersions []string `json:"storedVersions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &crd); err != nil {
		return nil, err
	}
	counts, err := s.StoredAPIVersions(ctx, group, resource)
	if err != nil {
		return nil, err
	}
	var out []string
	for apiVersion, n := range counts {
		if !slices.Contains(crd.Status.StoredVersions, strings.TrimPrefix(apiVersion, group+"/")) {
			out = append(out, fmt.Sprintf("%d objects stored at %s, which status.storedVersions %v lacks", n, apiVersion, crd.Status.StoredVersions))
		}
	}
	return out, nil
}
