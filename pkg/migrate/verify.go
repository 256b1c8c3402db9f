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

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// VerifyOptions tune a round-trip check.
type VerifyOptions struct {
	// Versions to check; empty means every served version.
	Versions    []string
	Concurrency int
	PageSize    int64
	// Progress, when set, is called after each object with the count done
	// and the estimated total.
	Progress func(done, total int64)
}

// Loss is an object that did not come back as it was read.
type Loss struct {
	Namespace string      `json:"namespace,omitempty"`
	Name      string      `json:"name"`
	Version   string      `json:"version"`
	Diffs     []FieldDiff `json:"diffs,omitempty"`
	// Error is set when the round trip failed outright (a conversion or
	// validation error) rather than returning a different object.
	Error string `json:"error,omitempty"`
}

// VerifyResult is what a round-trip check found.
type VerifyResult struct {
	Storage  string   `json:"storage"`
	Versions []string `json:"versions"`
	Objects  int64    `json:"objects"`
	Losses   []Loss   `json:"losses"`
}

// Passed reports a check in which every object round-tripped.
func (r *VerifyResult) Passed() bool { return len(r.Losses) == 0 }

// Verification is the record of a passed check, for the bridge stage.
func (r *VerifyResult) Verification() lifecycle.Verification {
	return lifecycle.Verification{From: r.Storage, Objects: r.Objects}
}

// Verify runs the conversion round trip of the conversion KEP on the
// cluster's real objects, through the API server's own conversion path
// (the webhook included): for every object and version V, read it at V,
// send it back as a dry-run update at V, and compare what comes back with
// what was read. A difference means converting to storage and back loses
// something. Nothing is written.
func Verify(ctx context.Context, dyn dynamic.Interface, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, opts VerifyOptions) (*VerifyResult, error) {
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
	}
	gvr := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: crd.Spec.Group, Version: v, Resource: crd.Spec.Names.Plural}
	}
	var (
		mu    sync.Mutex
		done  atomic.Int64
		total atomic.Int64
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(opts.Concurrency, 1))
	_, err := ListPages(gctx, meta, gvr(res.Versions[0]), max(opts.PageSize, 1), func(p Page) error {
		known := done.Load() + int64(len(p.Items))
		if p.Remaining != nil {
			known += *p.Remaining
		}
		total.Store(max(total.Load(), known))
		for _, item := range p.Items {
			g.Go(func() error {
				for _, v := range res.Versions {
					loss, err := roundTrip(gctx, dyn.Resource(gvr(v)), item.Namespace, item.Name)
					if err != nil {
						return err
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
					opts.Progress(n, max(total.Load(), n))
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
	res.Objects = done.Load()
	return res, nil
}

// roundTrip checks one object at one version. An object gone meanwhile is
// not a loss; an API error other than a conversion or validation failure
// ends the check.
func roundTrip(ctx context.Context, ri dynamic.NamespaceableResourceInterface, ns, name string) (*Loss, error) {
	r := ri.Namespace(ns)
	read, err := r.Get(ctx, name, metav1.GetOptions{})
	switch {
	case objectGone(err):
		return nil, nil
	case isObjectFailure(err):
		return &Loss{Namespace: ns, Name: name, Error: err.Error()}, nil
	case err != nil:
		return nil, err
	}
	back, err := r.Update(ctx, read.DeepCopy(), metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: FieldManager})
	switch {
	case objectGone(err) || apierrors.IsConflict(err):
		// Deleted or changed between the read and the update: the object
		// in hand is no longer the object in the cluster.
		return nil, nil
	case isObjectFailure(err):
		return &Loss{Namespace: ns, Name: name, Error: err.Error()}, nil
	case err != nil:
		return nil, err
	}
	if diffs := diffFields("", comparable(read), comparable(back)); len(diffs) > 0 {
		return &Loss{Namespace: ns, Name: name, Diffs: diffs}, nil
	}
	return nil, nil
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

func served(crd *apiextensionsv1.CustomResourceDefinition, v string) bool {
	for _, ver := range crd.Spec.Versions {
		if ver.Name == v {
			return ver.Served
		}
	}
	return false
}
