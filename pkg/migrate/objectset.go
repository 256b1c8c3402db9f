package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/cluster"
)

// objectSet hashes the objects of a listing, in list order (etcd's key
// order, the same at every version): their address, uid and
// resourceVersion. Two listings hash alike only if no object was created,
// deleted or written between them.
type objectSet struct{ h hash.Hash }

func newObjectSet() *objectSet { return &objectSet{h: sha256.New()} }

func (s *objectSet) add(o *metav1.ObjectMeta) {
	for _, part := range []string{o.Namespace, o.Name, string(o.UID), o.ResourceVersion} {
		s.h.Write([]byte(part))
		s.h.Write([]byte{0})
	}
}

func (s *objectSet) sum() string { return hex.EncodeToString(s.h.Sum(nil)) }

// objectSetOf lists the resource's objects, metadata only, and hashes them.
func objectSetOf(ctx context.Context, meta metadata.Interface, gvr schema.GroupVersionResource, pageSize int64) (string, error) {
	set := newObjectSet()
	_, err := cluster.ListPages(ctx, meta, gvr, pageSize, func(p cluster.Page) error {
		for i := range p.Items {
			set.add(&p.Items[i].ObjectMeta)
		}
		return nil
	})
	return set.sum(), err
}
