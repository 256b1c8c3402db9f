package migrate

import (
	"context"
	"sync"
	"time"
)

// minWindow is the shortest measuring window: a few dozen requests even
// on a fast local server, so one slow answer does not swing the limit.
const minWindow = 100 * time.Millisecond

// gate lets through as many requests at once as the limiter allows and
// feeds it what they saw, one window at a time. A window lasts at least
// two mean latencies, so it sees the requests that a change of the limit
// started.
type gate struct {
	mu       sync.Mutex
	cond     *sync.Cond
	lim      *limiter
	limit    int
	inflight int
	onLimit  func(int)
	// throttled counts the 429 answers the clients saw so far (nil: not
	// known); each window takes the difference.
	throttled     func() int64
	lastThrottled int64
	// lastCut is when a 429 last lowered the limit.
	lastCut time.Time

	start   time.Time
	done    int
	latency time.Duration
}

func newGate(maxLimit int, gentle bool, throttled func() int64, onLimit func(int)) *gate {
	g := &gate{lim: newLimiter(maxLimit, gentle), throttled: throttled, onLimit: onLimit, start: time.Now()}
	g.cond = sync.NewCond(&g.mu)
	g.limit = int(g.lim.limit)
	if throttled != nil {
		g.lastThrottled = throttled()
	}
	if onLimit != nil {
		onLimit(g.limit)
	}
	return g
}

// startFor sets the first limit for a round trip of rtt (see
// limiter.startFor), before any request.
func (g *gate) startFor(rtt time.Duration) {
	g.mu.Lock()
	g.limit = g.lim.startFor(rtt)
	g.mu.Unlock()
	if g.onLimit != nil {
		g.onLimit(g.limit)
	}
}

// acquire waits for room under the limit; false when ctx ended first.
func (g *gate) acquire(ctx context.Context) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ctx.Err() != nil {
		return false
	}
	if g.inflight < g.limit {
		// The common case on the hot path: no wait, so no wake-up to arrange.
		g.inflight++
		return true
	}
	stop := context.AfterFunc(ctx, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.cond.Broadcast()
	})
	defer stop()
	for g.inflight >= g.limit {
		if ctx.Err() != nil {
			return false
		}
		g.cond.Wait()
	}
	g.inflight++
	return true
}

// release ends a request that took latency, and closes the window when it
// is long enough.
func (g *gate) release(latency time.Duration) {
	g.mu.Lock()
	g.inflight--
	g.done++
	g.latency += latency
	changed := 0
	now := time.Now()
	mean := g.latency / time.Duration(g.done)
	if elapsed := now.Sub(g.start); elapsed >= max(minWindow, 2*mean) {
		w := window{done: g.done, elapsed: elapsed, latency: mean}
		if g.throttled != nil {
			t := g.throttled()
			w.throttled, g.lastThrottled = int(t-g.lastThrottled), t
			if w.throttled > 0 {
				g.lastCut = now
			}
		}
		if next := g.lim.observe(w); next != g.limit {
			g.limit, changed = next, next
		}
		g.start, g.done, g.latency = now, 0, 0
	}
	// One request ended: one waiter may start, unless the limit grew.
	if changed > 0 {
		g.cond.Broadcast()
	} else {
		g.cond.Signal()
	}
	g.mu.Unlock()
	if changed > 0 && g.onLimit != nil {
		g.onLimit(changed)
	}
}

// pause gives back the slot of a request the server answered 429, lowers
// the limit at once (once per window: the other 429s of the same burst were
// sent under the limit this one lowers), waits d, and waits for room under
// the lowered limit. false when ctx ended: the slot is then taken anyway,
// for the caller's release.
func (g *gate) pause(ctx context.Context, d time.Duration) bool {
	g.mu.Lock()
	g.inflight--
	changed := 0
	// Every 429 counted so far is this burst's: the window's close must
	// not halve for them again.
	if g.throttled != nil {
		g.lastThrottled = g.throttled()
	}
	if now := time.Now(); now.Sub(g.lastCut) >= max(minWindow, 2*g.meanLatency()) {
		if next := g.lim.observe(window{throttled: 1}); next != g.limit {
			g.limit, changed = next, next
		}
		g.lastCut, g.start, g.done, g.latency = now, now, 0, 0
	}
	g.cond.Signal()
	g.mu.Unlock()
	if changed > 0 && g.onLimit != nil {
		g.onLimit(changed)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	if g.acquire(ctx) {
		return true
	}
	g.mu.Lock()
	g.inflight++
	g.mu.Unlock()
	return false
}

// meanLatency is the mean latency of the requests of the current window,
// or of none. g.mu is held.
func (g *gate) meanLatency() time.Duration {
	if g.done == 0 {
		return 0
	}
	return g.latency / time.Duration(g.done)
}

// stats is what the limit did over the pass.
func (g *gate) stats() (final, peak int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limit, g.lim.peak
}
