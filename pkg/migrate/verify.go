package migrate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// VerifyOptions tune a round-trip check. The zero value is the default.
type VerifyOptions struct {
	// Versions to check; empty means every served version.
	Versions []string
	// Concurrency is objects checked at once (0: DefaultConcurrency).
	Concurrency int
	// PageSize is objects listed per request (0: DefaultPageSize).
	PageSize int64
	// Progress, when set, is called after each object with the count done
	// and the estimated total.
	Progress func(done, total int64)
}

// Verify runs the conversion round trip of the conversion KEP on the
// cluster's real objects, through the API server's own conversion path
// (the webhook included): for every object and version V, read it at V,
// send it back as a dry-run update at V, and compare what comes back with
// what was read. A difference means converting to storage and back loses
// something. Nothing is written.
func Verify(ctx context.Context, dyn dynamic.Interface, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, opts VerifyOptions) (*VerifyResult, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	res := &VerifyResult{Storage: lifecycle.StorageVersion(crd), Versions: opts.Versions, Losses: []Loss{}}
	if len(res.Versions) == 0 {
		for _, v := range crd.Spec.Versions {
			if v.Served {
				res.Versions = append(res.Versions, v.Name)
			}
		}
	}
	for _, v := range res.Versions {
		if !served(crd, v) {
			return nil, fmt.Errorf("%s is not a served version of %s", v, crd.Name)
		}
		if v == res.Storage {
			res.RoundTrips = append(res.RoundTrips, v+" (the storage version: no conversion)")
			continue
		}
		res.RoundTrips = append(res.RoundTrips, v+"→"+res.Storage+"→"+v)
		res.Unchecked = append(res.Unchecked, reverseTrip(crd, res.Storage, v))
	}
	gvr := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: crd.Spec.Group, Version: v, Resource: crd.Spec.Names.Plural}
	}
	schemas := map[string]*apiextensionsv1.JSONSchemaProps{}
	for _, v := range res.Versions {
		schemas[v] = schemaOf(crd, v)
	}
	var (
		mu      sync.Mutex
		done    atomic.Int64
		skipped atomic.Int64
		total   atomic.Int64
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(opts.Concurrency, 1))
	_, err := cluster.ListPages(gctx, meta, gvr(res.Versions[0]), max(opts.PageSize, 1), func(p cluster.Page) error {
		known := done.Load() + skipped.Load() + int64(len(p.Items))
		if p.Remaining != nil {
			known += *p.Remaining
		}
		total.Store(max(total.Load(), known))
		for _, item := range p.Items {
			g.Go(func() error {
				for _, v := range res.Versions {
					loss, skip, err := roundTrip(gctx, dyn.Resource(gvr(v)), gvr(v).GroupResource(), item.Namespace, item.Name, schemas[v])
					if err != nil {
						return err
					}
					if skip {
						skipped.Add(1)
						return nil
					}
					if loss != nil {
						loss.Version = v
						mu.Lock()
						res.Losses = append(res.Losses, *loss)
						mu.Unlock()
					}
				}
				n := done.Add(1)
				if opts.Progress != nil {
					opts.Progress(n+skipped.Load(), max(total.Load(), n+skipped.Load()))
				}
				return nil
			})
		}
		return nil
	})
	if werr := g.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	res.Objects, res.Skipped = done.Load(), skipped.Load()
	return res, nil
}

// reverseTrip says how the round trip a check at v cannot see, storage→v→
// storage, is known: a dry-run at v goes v→storage→v only. Objects stored
// at the storage version take the other way when v becomes the storage
// version and they are re-stored.
func reverseTrip(crd *apiextensionsv1.CustomResourceDefinition, storage, v string) string {
	trip := storage + "→" + v + "→" + storage
	if ok, _ := lifecycle.SchemaProof(crd, storage, v); ok {
		return trip + ": proven by the schemas (conversion None, " + v + " keeps every field " + storage + " allows)"
	}
	return trip + ": not checked while " + storage + " is the storage version; promote --to deprecated checks it on every object after switching (and switches back if anything would be lost), and migrate checks it before re-storing"
}

// roundTrip checks one object at one version. An object deleted or changed
// between the read and the check is skipped: the object in hand is no longer
// the object in the cluster. An API error other than a conversion or
// validation failure ends the check.
func roundTrip(ctx context.Context, ri dynamic.NamespaceableResourceInterface, gr schema.GroupResource, ns, name string, s *apiextensionsv1.JSONSchemaProps) (*Loss, bool, error) {
	r := ri.Namespace(ns)
	read, err := r.Get(ctx, name, metav1.GetOptions{})
	switch {
	case objectGone(err, gr, name):
		return nil, true, nil
	case isObjectFailure(err):
		return &Loss{Namespace: ns, Name: name, Error: err.Error()}, false, nil
	case err != nil:
		return nil, false, err
	}
	back, err := r.Update(ctx, read.DeepCopy(), metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: FieldManager})
	switch {
	case objectGone(err, gr, name) || realConflict(err, gr, name):
		return nil, true, nil
	case isObjectFailure(err):
		return &Loss{Namespace: ns, Name: name, Error: err.Error()}, false, nil
	case err != nil:
		return nil, false, err
	}
	if diffs := diffFields("", comparable(read), comparable(back), s); len(diffs) > 0 {
		return &Loss{Namespace: ns, Name: name, Diffs: diffs}, false, nil
	}
	return nil, false, nil
}

// comparable drops what a write legitimately changes.
func comparable(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	for _, f := range []string{"resourceVersion", "generation", "managedFields", "creationTimestamp"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	return c.Object
}

// isObjectFailure tells an error about this object (its conversion or its
// validation failed) from an error about the cluster or the request.
func isObjectFailure(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsInternalError(err)
}

// schemaOf is version v's schema, or nil: it tells the diff which lists
// are keyed.
func schemaOf(crd *apiextensionsv1.CustomResourceDefinition, v string) *apiextensionsv1.JSONSchemaProps {
	for _, ver := range crd.Spec.Versions {
		if ver.Name == v && ver.Schema != nil {
			return ver.Schema.OpenAPIV3Schema
		}
	}
	return nil
}

func served(crd *apiextensionsv1.CustomResourceDefinition, v string) bool {
	for _, ver := range crd.Spec.Versions {
		if ver.Name == v {
			return ver.Served
		}
	}
	return false
}
