package migrate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// VerifyOptions tune a round-trip check. The zero value is the default.
type VerifyOptions struct {
	// Versions to check; empty means every served version.
	Versions []string
	// Concurrency bounds the checks in flight; below it the check adapts
	// as a migration does (0: DefaultConcurrency).
	Concurrency int
	// Gentle paces the checks as RestoreOptions.Gentle paces writes.
	Gentle bool
	// PageSize is objects listed per request (0: DefaultPageSize).
	PageSize int64
	// Record records, for each version but the storage version whose every
	// object passed, the check on the CRD (lifecycle.CheckFor), with the
	// objects it covered: promote --to bridge takes it instead of checking
	// again while nothing changed.
	Record bool
	// Progress, when set, is called after each check (one object at one
	// version) with the count done and the estimated total. Calls come
	// from many goroutines.
	Progress func(done, total int64)
}

// Verify runs the conversion round trip of the conversion KEP on the
// cluster's real objects, through the API server's own conversion path
// (the webhook included): for every version V and every object (listed a
// page at a time, metadata only), read it at V, send it back as a dry-run
// update at V, and compare what comes back with what was read. A difference means converting to storage and back loses
// something. Nothing is written.
func Verify(ctx context.Context, c Clients, crd *apiextensionsv1.CustomResourceDefinition, opts VerifyOptions) (*VerifyResult, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	opts.Concurrency = min(opts.Concurrency, MaxConcurrency)
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	// A dry-run update needs the update verb: RBAC cannot tell it from a
	// write. Objects the user may not check would read as losses.
	if err := requireAccess(ctx, c, crd, access{op: "check old→new→old on", objectVerbs: []string{"list", "get", "update"}}, nil); err != nil {
		return nil, err
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
		mu    sync.Mutex
		done  atomic.Int64 // checks, one object at one version
		total atomic.Int64
		g     = newGate(opts.Concurrency, opts.Gentle, c.restoreOptions(RestoreOptions{}).throttled, nil)
	)
	res.Objects = -1
	for i, v := range res.Versions {
		var checked, skipped int64
		set := newObjectSet()
		lossesBefore := len(res.Losses)
		err := func() error {
			vctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			var wg sync.WaitGroup
			defer wg.Wait()
			var listed int64
			base := done.Load()
			ri := c.Dynamic.Resource(gvr(v))
			_, err := cluster.ListPages(vctx, c.Metadata, gvr(v), opts.PageSize, func(p cluster.Page) error {
				listed += int64(len(p.Items))
				known := listed
				if p.Remaining != nil {
					known += *p.Remaining
				}
				// Later versions are estimated at this one's count.
				total.Store(max(total.Load(), base+known*int64(len(res.Versions)-i)))
				for _, item := range p.Items {
					set.add(&item.ObjectMeta)
					if !g.acquire(vctx) {
						return context.Cause(vctx)
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						began := time.Now()
						loss, skip, err := roundTrip(vctx, ri.Namespace(item.Namespace), gvr(v).GroupResource(), item.Namespace, item.Name, schemas[v])
						g.release(time.Since(began))
						if err != nil {
							cancel(err)
							return
						}
						mu.Lock()
						switch {
						case skip:
							skipped++
						case loss != nil:
							loss.Version = v
							res.Losses = append(res.Losses, *loss)
							checked++
						default:
							checked++
						}
						mu.Unlock()
						// Outside the lock: a slow callback must not stall the checks.
						if n := done.Add(1); opts.Progress != nil {
							opts.Progress(n, max(total.Load(), n))
						}
					}()
				}
				return nil
			})
			wg.Wait()
			if cause := context.Cause(vctx); cause != nil && ctx.Err() == nil {
				return cause
			}
			return err
		}()
		if err != nil {
			return nil, err
		}
		if opts.Record && v != res.Storage {
			// A check that did not pass takes back an earlier record: the
			// webhook may have changed behind the same configuration.
			rec := lifecycle.Verification{From: res.Storage, Objects: checked, ObjectSet: set.sum()}
			passed := skipped == 0 && len(res.Losses) == lossesBefore
			// Only a pass may go unrecorded: a failed check that cannot take
			// back an earlier passing record would leave promote --to bridge
			// trusting it.
			if err := recordCheck(ctx, c.CRDs, crd, v, rec, passed); passed && apierrors.IsForbidden(err) {
				res.NotRecorded = "the check was not recorded on the CRD (you may not patch it): promote --to bridge checks again"
			} else if err != nil {
				return nil, err
			}
		}
		if res.Objects < 0 || checked < res.Objects {
			res.Objects = checked
		}
		res.Skipped = max(res.Skipped, skipped)
	}
	res.Objects = max(res.Objects, 0)
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

// roundTrip checks one object at one version: it reads the object with a
// GET, not from a list, because a list may be served from the watch cache,
// whose cached encodings of an unchanged object can predate the conversion
// webhook now deployed. An object deleted or changed between the read and
// the check is skipped: the object in hand is no longer the object in the
// cluster. An API error other than a conversion or validation failure ends
// the check.
func roundTrip(ctx context.Context, r dynamic.ResourceInterface, gr schema.GroupResource, ns, name string, s *apiextensionsv1.JSONSchemaProps) (*Loss, bool, error) {
	read, err := r.Get(ctx, name, metav1.GetOptions{})
	switch {
	case objectGone(err, gr, name):
		return nil, true, nil
	case isObjectFailure(err):
		return &Loss{Namespace: ns, Name: name, Error: err.Error()}, false, nil
	case err != nil:
		return nil, false, err
	}
	diffs, err := sendBack(ctx, r, read, s)
	switch {
	case objectGone(err, gr, name) || realConflict(err, gr, name):
		return nil, true, nil
	case isObjectFailure(err):
		return &Loss{Namespace: ns, Name: name, Error: err.Error()}, false, nil
	case err != nil:
		return nil, false, err
	}
	if len(diffs) > 0 {
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
