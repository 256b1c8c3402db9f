// Package pass runs every per-object pass over a cluster's objects (re-store, checked re-store,
// managedFields cleanup, round-trip check): it lists them a page at a time and hands each to a
// function on a pool of workers. Requests in flight adapt to what the server and path take (see
// limiter) or are paced by the server's latency tail (see pacer), and back off on 429.
package pass

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// Options tune a pass; the caller has set every default.
type Options struct {
	Concurrency int
	// Gentle paces starts by the server's latency tail instead of filling what it takes.
	Gentle   bool
	PageSize int64
	// RetryFor bounds how long one request is retried while the server is busy or unreachable.
	RetryFor time.Duration
	// Throttled counts the 429s the clients saw so far (nil: unknown), for the limit to back off.
	Throttled func() int64
	// RTT, if known, is a round trip measured before the pass: the limit starts where it would climb.
	RTT time.Duration
	// OnLimit hears each change of the limit, from many goroutines.
	OnLimit func(limit int)
	// Progress hears, after each object, the objects done and the estimated total, from many goroutines.
	Progress func(done, total int64)
}

// Page is one page of a listing and how many objects remain after it (nil: not said).
type Page[T any] struct {
	Items     []T
	Remaining *int64
}

// Source lists objects a page at a time, in list order; it returns how many continue tokens expired.
type Source[T any] func(ctx context.Context, pageSize int64, page func(Page[T]) error) (int, error)

// Pass is a gate on requests in flight and a count of requests sent. Runs of one Pass share the
// gate: each starts from what the last measured.
type Pass struct {
	opts Options
	gate *gate
	sent atomic.Int64
}

// New makes a Pass.
func New(o Options) *Pass {
	o.Concurrency = max(o.Concurrency, 1)
	p := &Pass{opts: o, gate: newGate(o.Concurrency, o.Gentle, o.Throttled, o.OnLimit)}
	if o.RTT > 0 {
		p.gate.startFor(o.RTT)
	}
	return p
}

// Stats is what a run saw of its listing, and why it ended early.
type Stats struct {
	Listed int64
	// ExpiredContinues counts continue tokens that expired, the listing going on from a fresh one.
	ExpiredContinues int
	// Halted is what a function returned that stopped the run.
	Halted error
	// ListErr is why the listing failed on its own (not halted, not cancelled).
	ListErr error
}

// Requests counts every page listed and every attempt through Attempt, over every run of p.
func (p *Pass) Requests() int64 { return p.sent.Load() }

// Concurrency is what the limit of requests in flight did.
func (p *Pass) Concurrency() results.Concurrency {
	final, peak, rate, peakRate := p.gate.stats()
	return results.Concurrency{Final: final, Peak: peak, Max: p.opts.Concurrency, Gentle: p.opts.Gentle, Rate: math.Round(rate), PeakRate: math.Round(peakRate)}
}

var errHalted = errors.New("halted")

// Run hands every object src lists to each, on p's pool, one gate slot per object however many
// requests it makes. An error from each halts the run (Stats.Halted holds the first); an object's
// own failure is each's to record. Cancelling ctx ends the run promptly.
func Run[T any](ctx context.Context, p *Pass, src Source[T], each func(ctx context.Context, it T) error) Stats {
	var (
		st      Stats
		halted  atomic.Pointer[error]
		listed  atomic.Int64
		done    atomic.Int64
		total   atomic.Int64
		wg      sync.WaitGroup
		workers int
	)
	items := make(chan T, p.opts.PageSize)
	work := func() {
		defer wg.Done()
		for it := range items {
			if halted.Load() != nil || !p.gate.acquire(ctx) {
				continue // drain: nothing new is started
			}
			began := time.Now()
			err := each(ctx, it)
			p.gate.release(time.Since(began))
			if err != nil {
				halted.CompareAndSwap(nil, &err)
			}
			if ctx.Err() != nil {
				continue // abandoned, neither done nor failed
			}
			if n := done.Add(1); p.opts.Progress != nil {
				p.opts.Progress(n, max(total.Load(), n))
			}
		}
	}
	var listErr error
	st.ExpiredContinues, listErr = src(ctx, p.opts.PageSize, func(page Page[T]) error {
		known := listed.Load() + int64(len(page.Items))
		if page.Remaining != nil {
			known += *page.Remaining
		}
		total.Store(max(total.Load(), known))
		p.sent.Add(1)
		for _, it := range page.Items {
			if halted.Load() != nil {
				return errHalted
			}
			if workers < p.opts.Concurrency {
				workers++
				wg.Add(1)
				go work()
			}
			select {
			case items <- it:
				listed.Add(1)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	close(items)
	wg.Wait()
	st.Listed = listed.Load()
	if h := halted.Load(); h != nil {
		st.Halted = *h
	} else if ctx.Err() == nil {
		st.ListErr = listErr
	}
	return st
}
