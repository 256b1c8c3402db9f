package migrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// RestoreOptions tune the rewrite pass. The zero value is the default.
type RestoreOptions struct {
	// Concurrency bounds the requests in flight (0: DefaultConcurrency).
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
	// PageSize is objects listed per request (0: DefaultPageSize).
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
	OnFailure func(Failure)
	// RetryFor bounds how long one write is retried while the server is
	// busy or unreachable (0: DefaultRetryFor); past it the run stops.
	RetryFor time.Duration

	// throttled counts the 429 answers of the clients (NewClients
	// counts them), so the limit backs off on them.
	throttled func() int64
	// pause, set by a pass for its writes, gives a throttled write's slot
	// back for d and waits for room again; false when ctx ended.
	pause func(ctx context.Context, d time.Duration) bool
	// rtt, when known, is a round trip to the API server measured before
	// the pass: the limit starts where it would have climbed to.
	rtt time.Duration
	// onLoss hears each object a checked pass did not re-store because its
	// check showed a loss. Calls come one at a time.
	onLoss func(Loss)
	// sent counts the pass's requests: every page listed, every attempt
	// of every request about an object.
	sent *atomic.Int64
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

// source lists a pass's objects a page at a time and hands each page on;
// it returns how many continue tokens expired.
type source func(ctx context.Context, pageSize int64, page func(items []item, remaining *int64) error) (int, error)

// addresses lists the objects' metadata only.
func addresses(meta metadata.Interface, gvr schema.GroupVersionResource) source {
	return func(ctx context.Context, pageSize int64, page func([]item, *int64) error) (int, error) {
		return cluster.ListPages(ctx, meta, gvr, pageSize, func(p cluster.Page) error {
			items := make([]item, len(p.Items))
			for i := range p.Items {
				items[i].ObjectMeta = p.Items[i].ObjectMeta
			}
			return page(items, p.Remaining)
		})
	}
}

// wholeObjects lists the objects whole, read at gvr's version.
func wholeObjects(dyn dynamic.Interface, gvr schema.GroupVersionResource) source {
	return func(ctx context.Context, pageSize int64, page func([]item, *int64) error) (int, error) {
		return cluster.ListObjectPages(ctx, dyn, gvr, pageSize, func(p cluster.ObjectPage) error {
			items := make([]item, len(p.Items))
			for i := range p.Items {
				items[i] = itemOf(&p.Items[i])
			}
			return page(items, p.Remaining)
		})
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
type writer func(ctx context.Context, ri metadata.ResourceInterface, gr schema.GroupResource, it item, opts RestoreOptions) (outcome, error)

// unreachable wraps an error that outlasted the retry budget: the server
// is gone, not the object at fault, so the run stops rather than fail
// every object left.
type unreachable struct{ err error }

func (u unreachable) Error() string { return "the API server did not answer: " + u.err.Error() }
func (u unreachable) Unwrap() error { return u.err }

// Restore writes every object of the CRD back unchanged, so the API server
// re-encodes each one at the storage version: the write changes nothing,
// and etcd is written only where the encoding differs (the object was
// stored at another version). Objects are listed a page at a time and
// written by a bounded pool of workers. Cancelling ctx ends the pass
// promptly: writes in flight are abandoned (a write that changes nothing
// either happened or did not; neither leaves anything half-done).
func Restore(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, opts RestoreOptions) *RestoreResult {
	return forEachObject(ctx, meta, crd, addresses(meta, storageGVR(crd)), opts, restoreOne)
}

func storageGVR(crd *apiextensionsv1.CustomResourceDefinition) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: lifecycle.StorageVersion(crd), Resource: crd.Spec.Names.Plural}
}

// stop is why a pass ended early.
type stop struct {
	reason StopReason
	msg    string
}

// forEachObject lists the CRD's objects from src a page at a time and hands
// each to write, on a bounded pool of workers; writes go to the storage
// version.
func forEachObject(ctx context.Context, meta metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition, src source, opts RestoreOptions, write writer) *RestoreResult {
	opts = opts.withDefaults()
	start := time.Now()
	res := &RestoreResult{Failures: []Failure{}}
	defer func() { res.Took = time.Since(start) }()
	if opts.DryRun == DryRunClient {
		res.StopReason, res.Stopped = results.StopClientDryRun, ErrClientDryRun.Error()+": nothing was sent"
		return res
	}
	gvr := storageGVR(crd)
	var (
		mu       sync.Mutex // res
		report   sync.Mutex // OnFailure, one call at a time
		total    atomic.Int64
		done     atomic.Int64
		stopped  atomic.Pointer[stop]
		failures = func(f Failure) {
			if opts.OnFailure != nil {
				report.Lock()
				defer report.Unlock()
				opts.OnFailure(f)
			}
		}
	)
	halt := func(r StopReason, why string) { stopped.CompareAndSwap(nil, &stop{r, why}) }
	items := make(chan item, opts.PageSize)
	g := newGate(opts.Concurrency, opts.Gentle, opts.throttled, opts.OnLimit)
	if opts.rtt > 0 {
		g.startFor(opts.rtt)
	}
	opts.pause = g.pause
	opts.sent = new(atomic.Int64)
	defer func() {
		res.Requests = opts.sent.Load()
		final, peak, rate, peakRate := g.stats()
		res.Concurrency = &results.Concurrency{Final: final, Peak: peak, Max: opts.Concurrency, Gentle: opts.Gentle, Rate: math.Round(rate), PeakRate: math.Round(peakRate)}
	}()
	var wg sync.WaitGroup
	work := func() {
		defer wg.Done()
		for it := range items {
			if stopped.Load() != nil || !g.acquire(ctx) {
				continue // drain: nothing new is started
			}
			began := time.Now()
			outcome, err := write(ctx, meta.Resource(gvr).Namespace(it.Namespace), gvr.GroupResource(), it, opts)
			g.release(time.Since(began))
			if ctx.Err() != nil && err != nil {
				continue // abandoned by the interrupt: neither done nor failed
			}
			var gone unreachable
			var changed changedByWrite
			var lost lossFound
			var f *Failure
			mu.Lock()
			switch {
			case errors.As(err, &lost):
				res.Lost++
				if opts.onLoss != nil {
					opts.onLoss(lost.Loss)
				}
			case errors.As(err, &gone):
				halt(results.StopUnreachable, gone.Error()+": writing stopped; objects not yet written were left as they are, run again")
			case errors.As(err, &changed):
				res.Changed++
				f = &Failure{Namespace: it.Namespace, Name: it.Name, Reason: results.ReasonChangedByWrite, Message: changed.Error()}
			case err != nil:
				res.Failed++
				fl := failureOf(it.Namespace, it.Name, err)
				f = &fl
				if isConversionFailure(err) {
					halt(results.StopConversionFailing, "the conversion webhook is failing: writing stopped so no object is written while conversions fail")
				}
			case outcome == outcomeRewritten:
				res.Rewritten++
			case outcome == outcomeUnchanged:
				res.Unchanged++
			case outcome == outcomeGone:
				res.Gone++
			case outcome == outcomeConflicted:
				res.Conflicted++
			}
			if f != nil && len(res.Failures) < MaxFailuresKept {
				res.Failures = append(res.Failures, *f)
			}
			mu.Unlock()
			if f != nil {
				failures(*f)
			}
			if n := done.Add(1); opts.Progress != nil {
				opts.Progress(n, max(total.Load(), n))
			}
		}
	}
	// Workers start as objects arrive, never more than there are objects:
	// a high bound costs a small resource nothing.
	workers := 0
	var listErr error
	res.ExpiredContinues, listErr = src(ctx, opts.PageSize, func(page []item, remaining *int64) error {
		known := atomic.LoadInt64(&res.Listed) + int64(len(page))
		if remaining != nil {
			known += *remaining
		}
		total.Store(max(total.Load(), known))
		opts.sent.Add(1)
		for _, o := range page {
			if stopped.Load() != nil {
				return errStopped
			}
			if workers < opts.Concurrency {
				workers++
				wg.Add(1)
				go work()
			}
			select {
			case items <- o:
				atomic.AddInt64(&res.Listed, 1)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	close(items)
	wg.Wait()
	switch {
	case stopped.Load() != nil:
		res.StopReason, res.Stopped = stopped.Load().reason, stopped.Load().msg
	case ctx.Err() != nil:
		res.StopReason, res.Stopped = results.StopInterrupted, "interrupted: objects not yet written were left as they are; run again to complete"
	case listErr != nil:
		res.StopReason, res.Stopped = results.StopListFailed, "listing failed: "+listErr.Error()
	}
	slices.SortFunc(res.Failures, func(a, b Failure) int {
		if a.Namespace != b.Namespace {
			return strings.Compare(a.Namespace, b.Namespace)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return res
}

var errStopped = errors.New("stopped")

type outcome int

const (
	outcomeRewritten outcome = iota
	outcomeUnchanged
	outcomeGone
	outcomeConflicted
)

// writeTimeout bounds one attempt of a write, beyond the 60 s the API
// server may hold a request (queued by priority and fairness, say): one
// that hangs longer is retried.
const writeTimeout = 90 * time.Second

// throttlePause is how long a throttled write waits before it asks for a
// slot again.
const throttlePause = 100 * time.Millisecond

// maxThrottled is how long one object's write may be throttled (429) before
// it is given up as failed.
const maxThrottled = 10 * time.Minute

// restoreOne re-stores one object with a merge patch that sets nothing but
// the resourceVersion it was listed at: the object is unchanged, and a
// write by anyone else since the listing is a conflict (that write
// re-encoded it already). The answer is compared with the listing: a write
// meant to change nothing must not have changed anything.
func restoreOne(ctx context.Context, ri metadata.ResourceInterface, gr schema.GroupResource, it item, opts RestoreOptions) (outcome, error) {
	out, got, err := restoreAt(ctx, ri, gr, it, opts)
	if err == nil && got != nil {
		if what := writeEffects(&it.ObjectMeta, &got.ObjectMeta, true); len(what) > 0 {
			return out, changedByWrite(what)
		}
	}
	return out, err
}

// restoreAt sends the re-store's write of it: a merge patch of nothing but
// its resourceVersion, the precondition.
func restoreAt(ctx context.Context, ri metadata.ResourceInterface, gr schema.GroupResource, it item, opts RestoreOptions) (outcome, *metav1.PartialObjectMetadata, error) {
	patch := []byte(fmt.Sprintf(`{"metadata":{"resourceVersion":%q}}`, it.ResourceVersion))
	return withRetries(ctx, opts, gr, it, func(wctx context.Context) (*metav1.PartialObjectMetadata, error) {
		return ri.Patch(wctx, it.Name, types.MergePatchType, patch, patchOptions(opts))
	})
}

func patchOptions(o RestoreOptions) metav1.PatchOptions {
	return metav1.PatchOptions{FieldManager: o.FieldManager, DryRun: o.DryRun.sent()}
}

// withRetries runs one write of object it (see attempt). A new
// resourceVersion in the answer means etcd was written. Only the object's
// own NotFound and a real optimistic-concurrency conflict count as done;
// any other 404 or 409 (an admission denial may carry either) is a failure.
func withRetries(ctx context.Context, opts RestoreOptions, gr schema.GroupResource, it item, write func(context.Context) (*metav1.PartialObjectMetadata, error)) (outcome, *metav1.PartialObjectMetadata, error) {
	var got *metav1.PartialObjectMetadata
	err := attempt(ctx, opts, func(wctx context.Context) (err error) {
		got, err = write(wctx)
		return err
	})
	switch {
	case err == nil && got.GetResourceVersion() != it.ResourceVersion:
		return outcomeRewritten, got, nil
	case err == nil:
		return outcomeUnchanged, got, nil
	case objectGone(err, gr, it.Name):
		return outcomeGone, nil, nil
	case realConflict(err, gr, it.Name):
		return outcomeConflicted, nil, nil
	}
	return 0, nil, err
}

// attempt runs one request of a pass until it is answered; cancelling ctx
// abandons it. Transient errors (the server busy or restarting) are retried
// with bounded backoff, past which the error is unreachable; a 429 the
// server's throttling sent is retried for as long as it keeps answering it.
// Any other answer, error or not, is the caller's.
func attempt(ctx context.Context, opts RestoreOptions, request func(context.Context) error) error {
	retryFor := opts.RetryFor
	if retryFor <= 0 {
		retryFor = DefaultRetryFor
	}
	deadline := time.Now().Add(retryFor)
	delay := 100 * time.Millisecond
	var throttledSince time.Time
	for {
		wctx, cancel := context.WithTimeout(ctx, writeTimeout)
		wctx, mark := withThrottleMark(wctx)
		if opts.sent != nil {
			opts.sent.Add(1)
		}
		err := request(wctx)
		cancel()
		switch {
		case err == nil:
			return nil
		case mark.throttled.Load():
			// The server throttles (priority and fairness may hold a user to
			// one seat for long): it is there and asks for fewer requests.
			// It is waited for, never taken for unreachable, and the retry
			// waits for room under the limit the 429 lowered rather than
			// keep the slot of a pass that has too many; only an object
			// throttled for maxThrottled is given up, as failed.
			if throttledSince.IsZero() {
				throttledSince = time.Now()
			} else if time.Since(throttledSince) > maxThrottled {
				return fmt.Errorf("throttled for %s: %w", maxThrottled, err)
			}
			deadline = time.Now().Add(retryFor)
			if opts.pause != nil {
				// The lowered limit paces the retries: no backoff of its own.
				if !opts.pause(ctx, wait.Jitter(throttlePause, 0.5)) {
					return ctx.Err()
				}
				continue
			}
		case apierrors.IsTooManyRequests(err):
			// A 429 the server's throttling did not send (no Retry-After):
			// an admission denial with that code, about this object.
			return err
		case !isTransient(err):
			return err
		case time.Now().Add(delay).After(deadline):
			return unreachable{err}
		}
		select {
		case <-time.After(wait.Jitter(delay, 0.2)):
		case <-ctx.Done():
			return ctx.Err()
		}
		delay = min(2*delay, 5*time.Second)
	}
}
