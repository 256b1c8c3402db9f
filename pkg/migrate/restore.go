package migrate

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

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// RestoreOptions tune the rewrite pass. The zero value is the default.
type RestoreOptions struct {
	// Concurrency bounds the requests in flight (0: 256; at most 1024).
	// Below it the pass adapts the number to what the path to the API
	// server and the server itself take: it grows while throughput grows
	// and backs off when the server answers 429.
	Concurrency int
	// Gentle paces the writes, from 20 a second, so the server's tail
	// latency, which every other client waits in, stays close to what it
	// was at the slowest pace: slower, and other clients barely feel it.
	Gentle bool
	// OnLimit, when set, hears each change of the limit of requests in
	// flight (the progress line shows it). Calls may come from many
	// goroutines.
	OnLimit func(limit int)
	// PageSize is objects listed per request (0: 500).
	PageSize int64
	// DryRun "server" sends every write with dryRun=All; "client" is
	// refused (nothing would be sent).
	DryRun DryRun
	// FieldManager names the writes in managedFields (default
	// "kubectl-crdversion").
	FieldManager string
	// Progress, when set, hears the estimated total and each object done.
	// It is called from many goroutines at once and must be safe for that.
	Progress func(done, total int64)
	// OnFailure, when set, hears every failure as it happens (the failures
	// file); the result keeps the first MaxFailuresKept of them. Calls come
	// from many goroutines, one at a time, outside any lock of the pass.
	OnFailure func(results.Failure)
	// RetryFor bounds how long one write is retried while the server is
	// busy or unreachable (0: 30 s); past it the run stops.
	RetryFor time.Duration
}

// restoreRun is one pass over objects: what its caller tuned, and the state
// the run keeps, which no caller sets.
type restoreRun struct {
	RestoreOptions
	// throttled counts the 429 answers of the clients (NewClients
	// counts them), so the limit backs off on them.
	throttled func() int64
	// rtt, when known, is a round trip to the API server measured before
	// the pass: the limit starts where it would have climbed to.
	rtt time.Duration
	// onLoss hears each object a checked pass did not re-store because its
	// check showed a loss. Calls come one at a time.
	onLoss func(results.Loss)
	// run is the pass under way: its requests retry through it.
	run *pass.Pass
	// servers, when set, are the API servers the pass takes answers from:
	// each object's requests keep to one, shown switched before them.
	servers *switchedServers
	// checked, when set, counts the objects a checked pass checked: once
	// each, by the run of its requests whose answers were taken.
	checked *atomic.Int64
	// ran is set by the writer of one run of an object's requests once it
	// checked the object (markChecked); each run has its own.
	ran *bool
	// clean, when set, makes the managedFields the re-store leaves (entries
	// at versions no longer served moved or dropped: entriesCleaner);
	// cleaned counts the objects whose entries it changed.
	clean   func([]metav1.ManagedFieldsEntry) ([]metav1.ManagedFieldsEntry, bool)
	cleaned *atomic.Int64
	// defaults are the fields the storage version defaults where an old
	// version in storedVersions does not (schemacompat.DefaultsAdded).
	defaults []string
}

// cleans reports a write of it that moves or drops managedFields entries.
func (o restoreRun) cleans(it item) bool {
	_, changed := o.kept(it)
	return changed
}

// kept is the managedFields a write of it leaves, and whether they differ
// from its own.
func (o restoreRun) kept(it item) ([]metav1.ManagedFieldsEntry, bool) {
	if o.clean == nil {
		return it.ManagedFields, false
	}
	return o.clean(it.ManagedFields)
}

// MaxFailuresKept bounds the failures held in memory for the summary, so a
// run over a million rejected objects stays flat; OnFailure sees them all.
const MaxFailuresKept = 1000

// item is one object as listed: its metadata, and the whole object when
// the pass listed whole objects (a pass that checks each object first).
type item struct {
	metav1.ObjectMeta
	obj *unstructured.Unstructured
}

// addresses lists the objects' metadata only.
func addresses(meta metadata.Interface, gvr schema.GroupVersionResource) pass.Source[item] {
	return func(ctx context.Context, pageSize int64, page func(pass.Page[item]) error) (int, error) {
		return cluster.ListPages(ctx, meta, gvr, pageSize, func(p cluster.Page) error { return page(addressPage(p)) })
	}
}

// addressPage is a page of addresses as items without their objects.
func addressPage(p cluster.Page) pass.Page[item] {
	items := make([]item, len(p.Items))
	for i := range p.Items {
		items[i].ObjectMeta = p.Items[i].ObjectMeta
	}
	return pass.Page[item]{Items: items, Remaining: p.Remaining}
}

// wholeObjects lists the objects whole, read at gvr's version. A page the
// converter fails at that version is listed at the storage version, as
// addresses: an item without its object is read on its own.
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

// writer does one object's write and says how it went. Writes go through
// the metadata client: the server answers with the object's metadata
// (protobuf) rather than the whole object as JSON, which spares both ends
// the encoding of what the write does not need back.
type writer func(ctx context.Context, ri metadata.ResourceInterface, gr schema.GroupResource, it item, opts restoreRun) (outcome, error)

// restore writes every object of the CRD back unchanged, so the API server
// re-encodes each one at the storage version: the write changes nothing,
// and etcd is written only where the encoding differs (the object was
// stored at another version). Objects are listed a page at a time and
// written by a bounded pool of workers. Cancelling ctx ends the pass
// promptly: writes in flight are abandoned (a write that changes nothing
// either happened or did not; neither leaves anything half-done).
//
// It proves nothing itself: Migrate calls it only where the CRD proves
// old→new→old for every object (else it runs the checked pass), after the
// switch is in effect. Unexported so that no caller can re-store without
// that proof.
func restore(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, opts restoreRun) *results.RestoreResult {
	return forEachObject(ctx, meta, crd, addresses(meta, storageGVR(crd)), opts, restoreOne)
}

func storageGVR(crd *apiextensionsv1.CustomResourceDefinition) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: lifecycle.StorageVersion(crd), Resource: crd.Spec.Names.Plural}
}

// stop is why a pass ended early: a per-object write returns it to halt
// the pass.
type stop struct {
	reason results.StopReason
	msg    string
}

func (s stop) Error() string { return s.msg }

// forEachObject lists the CRD's objects from src a page at a time and hands
// each to write, on the pass engine; writes go to the storage version.
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
	// outcomeNotAtOld: the converter was asked to express the object at
	// every old version, so it is stored at none: not written.
	outcomeNotAtOld
)

// restoreOne re-stores one object with a merge patch that sets nothing but
// the resourceVersion it was listed at: the object is unchanged, and a
// write by anyone else since the listing is a conflict (that write
// re-encoded it already). The answer is compared with the listing: a write
// meant to change nothing must not have changed anything. A pass that
// cleans managedFields reads an object written meanwhile again and cleans
// it: that write re-encoded it, but kept its entries.
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

// readAnew reads an object written since it was listed again, metadata
// only, at the storage version, which converts nothing; gone if deleted.
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

// restoreAt sends the re-store's write of it: a merge patch of its
// resourceVersion, the precondition, and, in a pass that cleans, the
// managedFields it keeps; the cleanup is part of the one write the pass
// proves for the object, never a write of its own. The answer is compared
// with what was sent (labels: it was read at the storage version).
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
	out, got, err := withRetries(ctx, opts, gr, it, func(wctx context.Context) (*metav1.PartialObjectMetadata, error) {
		return ri.Patch(wctx, it.Name, types.MergePatchType, patch, patchOptions(opts))
	})
	if err != nil || got == nil {
		return out, err
	}
	if cleaning {
		// The API server puts the old entries back when its field manager
		// fails on the new ones: only the answer tells.
		if _, still := opts.clean(got.ManagedFields); still {
			return out, errors.New("the API server kept managedFields entries at unserved versions")
		}
		opts.cleaned.Add(1)
	}
	if what := writeEffects(&want, &got.ObjectMeta, labels, opts.defaults); len(what) > 0 {
		return out, changedByWrite(what)
	}
	return out, nil
}

func patchOptions(o restoreRun) metav1.PatchOptions {
	return metav1.PatchOptions{FieldManager: o.FieldManager, DryRun: o.DryRun.sent()}
}

// withRetries runs one write of object it (see attempt). A new
// resourceVersion in the answer means etcd was written. Only the object's
// own NotFound and a real optimistic-concurrency conflict count as done;
// any other 404 or 409 (an admission denial may carry either) is a failure.
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

// markChecked says the run opts belongs to checked its object: a run done
// again (its server not shown switched) must not count the object twice.
func markChecked(opts restoreRun) {
	if opts.ran != nil {
		*opts.ran = true
	}
}
