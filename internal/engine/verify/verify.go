package verify

import (
	"context"
	"fmt"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// A check's defaults are those of every pass over objects.
const (
	// DefaultConcurrency bounds the checks in flight; the pass adapts below it.
	DefaultConcurrency = pass.DefaultConcurrency
	// MaxConcurrency bounds Concurrency: four times the default.
	MaxConcurrency = pass.MaxConcurrency
	// DefaultPageSize is objects listed per request, metadata only.
	DefaultPageSize = pass.DefaultPageSize
)

// Options tune a round-trip check. The zero value is the default.
type Options struct {
	// Versions to check; empty means every served version.
	Versions []string
	// Concurrency bounds the checks in flight (0: DefaultConcurrency).
	Concurrency int
	// Gentle paces the checks as migrate.RestoreOptions.Gentle paces writes.
	Gentle bool
	// PageSize is objects listed per request (0: DefaultPageSize).
	PageSize int64
	// RefusedNotStored counts an object the converter refuses at a checked version as
	// NotStored, not a loss. Only for old versions after the switch, never the bridge's.
	RefusedNotStored bool
	// Record records each non-storage version's passed check on the CRD (stages.CheckFor),
	// so promote --to bridge need not check again while nothing changed.
	Record bool
	// Progress hears each version's pass (task, done, estimated total), from many goroutines.
	Progress func(task string, done, total int64)
}

// Verify runs the conversion KEP's round trip on the cluster's objects through the API
// server's own conversion path (webhook included): read each object at each version, send
// it back there as a dry-run update and compare. Nothing is written.
func Verify(ctx context.Context, c cluster.Clients, crd *apiextensionsv1.CustomResourceDefinition, opts Options) (*results.VerifyResult, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	opts.Concurrency = min(opts.Concurrency, MaxConcurrency)
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	// A dry-run update needs the update verb (RBAC cannot tell it from a write);
	// objects the user may not check would read as losses.
	if err := cluster.RequireAccess(ctx, c, crd, cluster.Access{Op: "check old→new→old on", ObjectVerbs: []string{"list", "get", "update"}}, nil); err != nil {
		return nil, err
	}
	res := &results.VerifyResult{Storage: stages.StorageVersion(crd), Versions: opts.Versions, Losses: []results.Loss{}}
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
	schemas := map[string]*apiextensionsv1.JSONSchemaProps{res.Storage: schemacompat.SchemaOf(crd, res.Storage)}
	for _, v := range res.Versions {
		schemas[v] = schemacompat.SchemaOf(crd, v)
	}
	var (
		mu   sync.Mutex
		task string // the version's pass under way: set between runs
		po   = pass.Options{Concurrency: opts.Concurrency, Gentle: opts.Gentle, PageSize: opts.PageSize, RetryFor: pass.DefaultRetryFor, Throttled: c.Throttled}
	)
	if opts.Progress != nil {
		po.Progress = func(done, total int64) { opts.Progress(task, done, total) }
	}
	p := pass.New(po)
	res.Objects = -1
	for i, v := range res.Versions {
		var checked, skipped, notStored int64
		set := cluster.NewObjectSet()
		lossesBefore := len(res.Losses)
		task = "verify " + res.RoundTrips[i]
		ri := c.Dynamic.Resource(gvr(v))
		// Listed at the storage version, which converts least; a page failing there, at v.
		st := pass.Run(ctx, p, hashing(addressesAt(c.Metadata, gvr(v), res.Storage, v), set), func(ctx context.Context, it metav1.PartialObjectMetadata) error {
			loss, outcome, err := roundTrip(ctx, p, ri.Namespace(it.Namespace), gvr(v).GroupResource(), it.Namespace, it.Name, schemas[v], schemas[res.Storage], opts.RefusedNotStored)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case outcome == tripNotStored:
				notStored++
			case outcome == tripSkipped:
				skipped++
			case loss != nil:
				loss.Version = v
				res.Losses = append(res.Losses, *loss)
				checked++
			default:
				checked++
			}
			return nil
		})
		switch {
		case st.Halted != nil:
			return nil, st.Halted
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case st.ListErr != nil:
			return nil, st.ListErr
		}
		if opts.Record && v != res.Storage {
			// A failed check takes back an earlier record (the webhook may have changed
			// behind the same configuration); only a pass may go unrecorded.
			rec := lifecycle.Verification{From: res.Storage, Objects: checked, ObjectSet: set.Sum()}
			passed := skipped == 0 && len(res.Losses) == lossesBefore
			if err := recordCheck(ctx, c.CRDs, crd, v, rec, passed); passed && apierrors.IsForbidden(err) {
				res.NotRecorded = "the check was not recorded on the CRD (you may not patch it): the step to bridge checks again"
			} else if err != nil {
				return nil, err
			}
		}
		if res.Objects < 0 || checked < res.Objects {
			res.Objects = checked
		}
		res.Skipped = max(res.Skipped, skipped)
		res.NotStored = max(res.NotStored, notStored)
	}
	res.Objects = max(res.Objects, 0)
	return res, nil
}

// reverseTrip says how storage→v→storage is known: a dry run at v goes v→storage→v only,
// and objects take the other way when v becomes storage and they are re-stored.
func reverseTrip(crd *apiextensionsv1.CustomResourceDefinition, storage, v string) string {
	trip := storage + "→" + v + "→" + storage
	if ok, _ := schemacompat.SchemaProof(crd, storage, v); ok {
		return trip + ": proven by the schemas (conversion None, " + v + " keeps every field " + storage + " allows)"
	}
	return trip + ": not checked while " + storage + " is the storage version; the step to deprecated checks it on every object after switching (and switches back if anything would be lost), and migrate checks it before re-storing"
}

// tripOutcome is how one object's round trip went.
type tripOutcome int

const (
	tripChecked tripOutcome = iota
	// tripSkipped: deleted or changed between the read and the check.
	tripSkipped
	// tripNotStored: the converter refused it at the version (Options.RefusedNotStored).
	tripNotStored
)

// roundTrip checks one object at one version. It reads with a GET, not a list: a list may
// come from the watch cache, whose encodings can predate the webhook now deployed. An object
// changed meanwhile is skipped; errors but conversion or validation failures end the check.
func roundTrip(ctx context.Context, p *pass.Pass, r dynamic.ResourceInterface, gr schema.GroupResource, ns, name string, s, storage *apiextensionsv1.JSONSchemaProps, refusedNotStored bool) (*results.Loss, tripOutcome, error) {
	var read *unstructured.Unstructured
	err := p.Attempt(ctx, func(rctx context.Context) (err error) {
		read, err = r.Get(rctx, name, metav1.GetOptions{})
		return err
	})
	switch {
	case pass.ObjectGone(err, gr, name):
		return nil, tripSkipped, nil
	case refusedNotStored && pass.IsConversionRefusal(err):
		return nil, tripNotStored, nil
	case isObjectFailure(err):
		return &results.Loss{Namespace: ns, Name: name, Error: err.Error()}, tripChecked, nil
	case err != nil:
		return nil, tripChecked, err
	}
	var diffs []results.FieldDiff
	err = p.Attempt(ctx, func(rctx context.Context) (err error) {
		diffs, err = sendBack(rctx, r, read, s, storage)
		return err
	})
	switch {
	case pass.ObjectGone(err, gr, name) || pass.RealConflict(err, gr, name):
		return nil, tripSkipped, nil
	case isObjectFailure(err):
		return &results.Loss{Namespace: ns, Name: name, Error: err.Error()}, tripChecked, nil
	case err != nil:
		return nil, tripChecked, err
	}
	if len(diffs) > 0 {
		return &results.Loss{Namespace: ns, Name: name, Diffs: diffs}, tripChecked, nil
	}
	return nil, tripChecked, nil
}

// addressesAt lists metadata at the first of versions that lists each page, so one object
// a converter will not express never fails its page.
func addressesAt(meta metadata.Interface, gvr schema.GroupVersionResource, versions ...string) pass.Source[metav1.PartialObjectMetadata] {
	return func(ctx context.Context, pageSize int64, page func(pass.Page[metav1.PartialObjectMetadata]) error) (int, error) {
		l := cluster.AddressesAt{Metadata: meta, Resource: gvr.GroupResource(), Versions: versions, Failed: pass.IsConversionFailure}
		return l.List(ctx, pageSize, func(p cluster.Page) error {
			return page(pass.Page[metav1.PartialObjectMetadata]{Items: p.Items, Remaining: p.Remaining})
		})
	}
}

func hashing(src pass.Source[metav1.PartialObjectMetadata], set *cluster.ObjectSet) pass.Source[metav1.PartialObjectMetadata] {
	return func(ctx context.Context, pageSize int64, page func(pass.Page[metav1.PartialObjectMetadata]) error) (int, error) {
		return src(ctx, pageSize, func(pg pass.Page[metav1.PartialObjectMetadata]) error {
			for i := range pg.Items {
				set.Add(&pg.Items[i].ObjectMeta)
			}
			return page(pg)
		})
	}
}

// comparable drops what a write legitimately changes.
func comparable(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	for _, f := range []string{"resourceVersion", "generation", "managedFields", "creationTimestamp"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	return c.Object
}

// isObjectFailure tells this object's conversion or validation failure from other errors.
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
