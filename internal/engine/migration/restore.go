package migration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// RestoreOptions tune the re-store pass. The zero value is the default.
type RestoreOptions struct {
	// Concurrency bounds the requests in flight (0: 256; at most 1024); below
	// it the pass grows while throughput grows and backs off on 429s.
	Concurrency int
	// Gentle paces the writes, from 20 a second, keeping the server's tail latency
	// near what it is at the slowest pace.
	Gentle bool
	// OnLimit, when set, hears each change of the in-flight limit, from any goroutine.
	OnLimit func(limit int)
	// PageSize is objects listed per request (0: 500).
	PageSize int64
	// DryRun "server" sends every write with dryRun=All; "client" is refused.
	DryRun DryRun
	// FieldManager names the writes in managedFields (default "kubectl-crdversion").
	FieldManager string
	// Progress, when set, hears the estimated total and each object done; it must
	// be safe for concurrent calls.
	Progress func(done, total int64)
	// OnFailure, when set, hears every failure, one call at a time from many
	// goroutines; the result keeps the first MaxFailuresKept.
	OnFailure func(results.Failure)
	// RetryFor bounds the retries of one write while the server is busy or
	// unreachable (0: 30 s); past it the run stops.
	RetryFor time.Duration
}

// restoreRun is one pass over objects: its options and the state it keeps.
type restoreRun struct {
	RestoreOptions
	// throttled counts the clients' 429 answers, so the limit backs off on them.
	throttled func() int64
	// rtt, when known, is a round trip measured before the pass: where the limit starts.
	rtt time.Duration
	// onLoss hears each object not re-stored because its check showed a loss.
	onLoss func(results.Loss)
	run    *pass.Pass
	// servers, when set, keep each object's requests to one server shown switched.
	servers *switchedServers
	// checked, when set, counts the objects checked, once each.
	checked *atomic.Int64
	// ran is set once this run of an object's requests checked it (markChecked).
	ran *bool
	// clean, when set, makes the managedFields a re-store leaves; cleaned counts changes.
	clean   func([]metav1.ManagedFieldsEntry) ([]metav1.ManagedFieldsEntry, bool)
	cleaned *atomic.Int64
	// defaults are the storage version's defaults an old version lacks (nil: none).
	defaults *storageDefaults
}

func (o restoreRun) cleans(it item) bool {
	_, changed := o.kept(it)
	return changed
}

func (o restoreRun) kept(it item) ([]metav1.ManagedFieldsEntry, bool) {
	if o.clean == nil {
		return it.ManagedFields, false
	}
	return o.clean(it.ManagedFields)
}

// MaxFailuresKept bounds the failures a result holds, so memory stays flat;
// OnFailure sees them all.
const MaxFailuresKept = 1000

// item is one object as listed; obj is set where the pass checks objects first.
type item struct {
	metav1.ObjectMeta
	obj *unstructured.Unstructured
}

func addresses(meta metadata.Interface, gvr schema.GroupVersionResource) pass.Source[item] {
	return func(ctx context.Context, pageSize int64, page func(pass.Page[item]) error) (int, error) {
		return cluster.ListPages(ctx, meta, gvr, pageSize, func(p cluster.Page) error { return page(addressPage(p)) })
	}
}

func addressPage(p cluster.Page) pass.Page[item] {
	items := make([]item, len(p.Items))
	for i := range p.Items {
		items[i].ObjectMeta = p.Items[i].ObjectMeta
	}
	return pass.Page[item]{Items: items, Remaining: p.Remaining}
}

// wholeObjects lists the objects whole at gvr's version; a page the converter
// fails is listed as addresses at the storage version, each read on its own.
func wholeObjects(dyn dynamic.Interface, meta metadata.Interface, gvr schema.GroupVersionResource, storage string) pass.Source[item] {
	return func(ctx context.Context, pageSize int64, page func(pass.Page[item]) error) (int, error) {
		l := cluster.ObjectsOrAddresses{Dynamic: dyn, Metadata: meta, Resource: gvr, At: storage, Failed: pass.IsConversionFailure}
		return l.List(ctx, pageSize, func(p cluster.ObjectPage) error {
			items := make([]item, len(p.Items))
			for i := range p.Items {
				items[i] = itemOf(&p.Items[i])
			}
			return page(pass.Page[item]{Items: items, Remaining: p.Remaining})
		}, func(p cluster.Page) error { return page(addressPage(p)) })
	}
}

func itemOf(u *unstructured.Unstructured) item {
	it := item{obj: u}
	it.Namespace, it.Name, it.UID, it.ResourceVersion = u.GetNamespace(), u.GetName(), u.GetUID(), u.GetResourceVersion()
	it.Generation, it.Labels, it.Annotations = u.GetGeneration(), u.GetLabels(), u.GetAnnotations()
	it.Finalizers, it.ManagedFields = u.GetFinalizers(), u.GetManagedFields()
	return it
}

// writer does one object's write. Writes go through the metadata client: the
// answer is protobuf metadata, not the whole object as JSON.
type writer func(ctx context.Context, ri metadata.ResourceInterface, gr schema.GroupResource, it item, opts restoreRun) (outcome, error)

// restore writes every object back unchanged, so the API server re-encodes
// it at the storage version (etcd is written only where the encoding
// differs). Cancelling ctx abandons writes in flight: a write that changes
// nothing leaves nothing half-done. It proves nothing itself, so it is
// unexported: Migrate calls it only where the CRD proves old→new→old.
func restore(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, opts restoreRun) *results.RestoreResult {
	return forEachObject(ctx, meta, crd, addresses(meta, storageGVR(crd)), opts, restoreOne)
}

func storageGVR(crd *apiextensionsv1.CustomResourceDefinition) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: stages.StorageVersion(crd), Resource: crd.Spec.Names.Plural}
}

type stop struct {
	reason results.StopReason
	msg    string
}

func (s stop) Error() string { return s.msg }

func forEachObject(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, src pass.Source[item], opts restoreRun, write writer) *results.RestoreResult {
	opts.RestoreOptions = opts.withDefaults()
	start := time.Now()
	res := &results.RestoreResult{Failures: []results.Failure{}}
	defer func() { res.Took = time.Since(start) }()
	if err := opts.DryRun.check(true); err != nil {
		res.StopReason, res.Stopped = results.StopClientDryRun, err.Error()+": nothing was sent"
		return res
	}
	gvr := storageGVR(crd)
	opts.run = pass.New(pass.Options{Concurrency: opts.Concurrency, Gentle: opts.Gentle, PageSize: opts.PageSize, RetryFor: opts.RetryFor,
		Throttled: opts.throttled, RTT: opts.rtt, OnLimit: opts.OnLimit, Progress: opts.Progress})
	var (
		mu     sync.Mutex // res
		report sync.Mutex // OnFailure, one call at a time
	)
	st := pass.Run(ctx, opts.run, src, func(ctx context.Context, it item) error {
		ri, gr := meta.Resource(gvr).Namespace(it.Namespace), gvr.GroupResource()
		var ran *bool // whether the run taken checked the object
		outcome, err := opts.servers.routed(ctx, func(ctx context.Context, again bool) (outcome, error) {
			ran = new(bool)
			run := opts
			run.ran = ran
			if again {
				fresh, gone, err := readAnew(ctx, ri, gr, it.Name)
				switch {
				case gone:
					return outcomeGone, nil
				case err != nil:
					return 0, err
				}
				it = fresh
			}
			return write(ctx, ri, gr, it, run)
		})
		if ctx.Err() != nil && err != nil {
			return nil // abandoned by the interrupt: neither done nor failed
		}
		if ran != nil && *ran && opts.checked != nil {
			opts.checked.Add(1)
		}
		var (
			gone    pass.Unreachable
			changed changedByWrite
			lost    verify.LossFound
			f       *results.Failure
			halt    error
		)
		mu.Lock()
		switch {
		case errors.As(err, &lost):
			res.Lost++
			if opts.onLoss != nil {
				opts.onLoss(lost.Loss)
			}
		case errors.As(err, &gone):
			halt = stop{results.StopUnreachable, gone.Error() + ": writing stopped; objects not yet written were left as they are"}
		case errors.As(err, &changed):
			res.Changed++
			f = &results.Failure{Namespace: it.Namespace, Name: it.Name, Reason: results.ReasonChangedByWrite, Message: changed.Error()}
		case err != nil:
			res.Failed++
			fl := failureOf(it.Namespace, it.Name, err)
			f = &fl
			if pass.IsConversionFailure(err) {
				halt = stop{results.StopConversionFailing, "the conversion webhook is failing: writing stopped so no object is written while conversions fail"}
			}
		case outcome == outcomeRewritten:
			res.Rewritten++
		case outcome == outcomeUnchanged:
			res.Unchanged++
		case outcome == outcomeGone:
			res.Gone++
		case outcome == outcomeConflicted:
			res.Conflicted++
		case outcome == outcomeNotAtOld:
			res.NotAtOld++
		}
		if f != nil && len(res.Failures) < MaxFailuresKept {
			res.Failures = append(res.Failures, *f)
		}
		mu.Unlock()
		if f != nil && opts.OnFailure != nil {
			report.Lock()
			defer report.Unlock()
			opts.OnFailure(*f)
		}
		return halt
	})
	res.Listed, res.ExpiredContinues, res.Requests = st.Listed, st.ExpiredContinues, opts.run.Requests()
	c := opts.run.Concurrency()
	res.Concurrency = &c
	var (
		s       stop
		changed CRDChanged
	)
	switch {
	case errors.As(st.Halted, &s):
		res.StopReason, res.Stopped = s.reason, s.msg
	case errors.As(context.Cause(ctx), &changed):
		res.StopReason, res.Stopped = results.StopCRDChanged, changed.Error()
	case ctx.Err() != nil:
		res.StopReason, res.Stopped = results.StopInterrupted, "interrupted: objects not yet written were left as they are"
	case st.ListErr != nil:
		res.StopReason, res.Stopped = results.StopListFailed, "listing failed: "+st.ListErr.Error()
	}
	slices.SortFunc(res.Failures, func(a, b results.Failure) int {
		if a.Namespace != b.Namespace {
			return strings.Compare(a.Namespace, b.Namespace)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return res
}

type outcome int

const (
	outcomeRewritten outcome = iota
	outcomeUnchanged
	outcomeGone
	outcomeConflicted
	// outcomeNotAtOld: expressed at no old version, so stored at none: not written.
	outcomeNotAtOld
)

// restoreOne re-stores one object with a merge patch of only its listed
// resourceVersion: a write by anyone since conflicts (and re-encoded it). A
// cleaning pass reads a conflicted object anew: that write kept its entries.
func restoreOne(ctx context.Context, ri metadata.ResourceInterface, gr schema.GroupResource, it item, opts restoreRun) (outcome, error) {
	for range maxReplans {
		out, err := restoreAt(ctx, ri, gr, it, opts, true)
		if out != outcomeConflicted || !opts.cleans(it) {
			return out, err
		}
		var gone bool
		if it, gone, err = readAnew(ctx, ri, gr, it.Name); gone {
			return outcomeGone, nil
		} else if err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("written by someone else %d times while its managedFields were cleaned: not cleaned", maxReplans)
}

// readAnew reads an object's metadata anew at the storage version; gone if deleted.
func readAnew(ctx context.Context, ri metadata.ResourceInterface, gr schema.GroupResource, name string) (item, bool, error) {
	fresh, err := ri.Get(ctx, name, metav1.GetOptions{})
	switch {
	case pass.ObjectGone(err, gr, name):
		return item{}, true, nil
	case err != nil:
		return item{}, false, err
	}
	return item{ObjectMeta: fresh.ObjectMeta}, false, nil
}

// restoreAt sends the re-store's write, with the managedFields to keep where
// the pass cleans (never a write of its own), and compares the answer with
// what was sent; labels too where it was read at the storage version.
func restoreAt(ctx context.Context, ri metadata.ResourceInterface, gr schema.GroupResource, it item, opts restoreRun, labels bool) (outcome, error) {
	want := it.ObjectMeta
	patch := []byte(fmt.Sprintf(`{"metadata":{"resourceVersion":%q}}`, it.ResourceVersion))
	keep, cleaning := opts.kept(it)
	if cleaning {
		want.ManagedFields = keep
		var err error
		patch, err = json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": it.ResourceVersion, "managedFields": managedFieldsValue(keep)}})
		if err != nil {
			return 0, err
		}
	}
	var whole *unstructured.Unstructured // the answer, where it tells the defaults' effects apart
	out, got, err := withRetries(ctx, opts, gr, it, func(wctx context.Context) (m *metav1.PartialObjectMetadata, err error) {
		if opts.defaults.compares(it) {
			m, whole, err = opts.defaults.restoreWhole(wctx, it, patch, patchOptions(opts))
			return m, err
		}
		return ri.Patch(wctx, it.Name, types.MergePatchType, patch, patchOptions(opts))
	})
	if err != nil || got == nil {
		return out, err
	}
	if cleaning {
		// The API server puts the old entries back when its field manager fails on
		// the new ones: only the answer tells.
		if _, still := opts.clean(got.ManagedFields); still {
			return out, errors.New("the API server kept managedFields entries at unserved versions")
		}
		opts.cleaned.Add(1)
	}
	seen := defaultsSeen{}
	if got.Generation != want.Generation {
		seen = opts.defaults.seen(it.obj, whole)
		if len(seen.filled) > 0 {
			opts.defaults.count(seen.filled)
		}
	}
	if what := writeEffects(&want, &got.ObjectMeta, labels, seen); len(what) > 0 {
		return out, changedByWrite(what)
	}
	return out, nil
}

func patchOptions(o restoreRun) metav1.PatchOptions {
	return metav1.PatchOptions{FieldManager: o.FieldManager, DryRun: o.DryRun.sent()}
}

// withRetries runs one write. Only the object's own NotFound and a real
// optimistic-concurrency conflict count as done; any other 404 or 409 (an
// admission denial may carry either) is a failure.
func withRetries(ctx context.Context, opts restoreRun, gr schema.GroupResource, it item, write func(context.Context) (*metav1.PartialObjectMetadata, error)) (outcome, *metav1.PartialObjectMetadata, error) {
	var got *metav1.PartialObjectMetadata
	err := opts.run.Attempt(ctx, func(wctx context.Context) (err error) {
		got, err = write(wctx)
		return err
	})
	switch {
	case err == nil && got.GetResourceVersion() != it.ResourceVersion:
		return outcomeRewritten, got, nil
	case err == nil:
		return outcomeUnchanged, got, nil
	case pass.ObjectGone(err, gr, it.Name):
		return outcomeGone, nil, nil
	case pass.RealConflict(err, gr, it.Name):
		return outcomeConflicted, nil, nil
	}
	return 0, nil, err
}

// markChecked marks the run's object checked, so a run done again counts it once.
func markChecked(opts restoreRun) {
	if opts.ran != nil {
		*opts.ran = true
	}
}
