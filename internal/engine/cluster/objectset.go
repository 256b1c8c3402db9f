package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// ObjectSet hashes a listing in list order (etcd's key order, the same at every version):
// two listings hash alike only if no object was created, deleted or written between them.
type ObjectSet struct{ h hash.Hash }

// NewObjectSet makes an empty ObjectSet.
func NewObjectSet() *ObjectSet { return &ObjectSet{h: sha256.New()} }

// Add hashes the next object of the listing.
func (s *ObjectSet) Add(o *metav1.ObjectMeta) {
	for _, part := range []string{o.Namespace, o.Name, string(o.UID), o.ResourceVersion} {
		s.h.Write([]byte(part))
		s.h.Write([]byte{0})
	}
}

// Sum is the listing's hash.
func (s *ObjectSet) Sum() string { return hex.EncodeToString(s.h.Sum(nil)) }

// ObjectSetOf lists the resource's objects, metadata only, and hashes them.
func ObjectSetOf(ctx context.Context, meta metadata.Interface, gvr schema.GroupVersionResource, pageSize int64) (string, error) {
	set := NewObjectSet()
	_, err := ListPages(ctx, meta, gvr, pageSize, func(p Page) error {
		for i := range p.Items {
			set.Add(&p.Items[i].ObjectMeta)
		}
		return nil
	})
	return set.Sum(), err
}
