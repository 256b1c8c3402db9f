package pass

import (
	"context"
	"math"
	"sync"
	"time"
)

// minWindow is the shortest measuring window, so one slow answer does not swing the limit.
const minWindow = 100 * time.Millisecond

// gate lets through as many requests at once as the limiter allows and feeds it what they saw,
// in windows of at least two mean latencies. A gentle gate paces starts instead (see pacer).
type gate struct {
	mu       sync.Mutex
	cond     *sync.Cond
	lim      *limiter
	limit    int
	inflight int
	onLimit  func(int)
	// throttled counts the 429s seen so far (nil: unknown); each window takes the difference.
	throttled     func() int64
	lastThrottled int64
	lastCut       time.Time // when a 429 last lowered the limit

	start   time.Time
	done    int
	latency time.Duration

	// Gentle only (lim is nil): interval spaces starts; peakShown is the most shown in flight.
	pace        *pacer
	maxLimit    int
	interval    time.Duration
	next        time.Time
	paceLatency time.Duration // the last window's mean
	peakShown   int
	latencies   []time.Duration
}

func newGate(maxLimit int, gentle bool, throttled func() int64, onLimit func(int)) *gate {
	g := &gate{throttled: throttled, onLimit: onLimit, start: time.Now(), maxLimit: max(maxLimit, 1)}
	g.cond = sync.NewCond(&g.mu)
	if gentle {
		g.pace = newPacer()
		g.setPace(g.pace.rate, minWindow) // a guess until a window measures it
	} else {
		g.lim = newLimiter(maxLimit)
		g.limit = int(g.lim.limit)
	}
	if throttled != nil {
		g.lastThrottled = throttled()
	}
	if onLimit != nil {
		onLimit(g.shown())
	}
	return g
}

// setPace paces starts at rate a second and caps requests in flight at twice what that rate
// keeps at latency, so a sudden slowdown finds no pile of them. Needs g.mu or an unshared gate.
func (g *gate) setPace(rate float64, latency time.Duration) {
	g.interval = time.Duration(float64(time.Second) / rate)
	g.limit = min(g.maxLimit, int(math.Ceil(2*rate*latency.Seconds()))+1)
	g.paceLatency = latency
}

// shown is the limit the progress line shows (paced: what the rate keeps in flight). Needs g.mu.
func (g *gate) shown() int {
	if g.pace == nil {
		return g.limit
	}
	return max(1, int(math.Round(g.pace.rate*g.paceLatency.Seconds())))
}

// startFor sets the first limit for a round trip of rtt, before any request.
func (g *gate) startFor(rtt time.Duration) {
	g.mu.Lock()
	if g.pace != nil {
		g.setPace(g.pace.rate, max(rtt, minWindow/10))
	} else {
		g.limit = g.lim.startFor(rtt)
	}
	shown := g.shown()
	g.mu.Unlock()
	if g.onLimit != nil {
		g.onLimit(shown)
	}
}

// acquire waits for room under the limit and, if paced, its turn; false when ctx ended first.
func (g *gate) acquire(ctx context.Context) bool {
	if !g.slot(ctx) {
		return false
	}
	if g.pace == nil {
		return true
	}
	g.mu.Lock()
	now := time.Now()
	start := later(g.next, now)
	g.next = start.Add(g.interval)
	g.mu.Unlock()
	if !start.After(now) {
		return true
	}
	t := time.NewTimer(start.Sub(now))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		g.mu.Lock()
		g.inflight--
		g.cond.Signal()
		g.mu.Unlock()
		return false
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// slot waits for room under the limit; false when ctx ended first.
func (g *gate) slot(ctx context.Context) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ctx.Err() != nil {
		return false
	}
	if g.inflight < g.limit {
		// Fast path: no wait, so no wake-up to arrange.
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

// release ends a request that took latency, closing the window when it is long enough.
func (g *gate) release(latency time.Duration) {
	g.mu.Lock()
	g.inflight--
	g.done++
	g.latency += latency
	changed := 0
	now := time.Now()
	mean := g.latency / time.Duration(g.done)
	grew := false
	if g.pace != nil {
		g.latencies = append(g.latencies, latency)
		if len(g.latencies) >= gentleSamples && now.Sub(g.start) >= 2*mean {
			before, limit := g.shown(), g.limit
			g.setPace(g.pace.observe(g.latencies), mean)
			shown := g.shown()
			if shown != before {
				changed = shown
			}
			g.peakShown = max(g.peakShown, shown)
			grew = g.limit > limit
			g.start, g.done, g.latency, g.latencies = now, 0, 0, g.latencies[:0]
		}
	} else if elapsed := now.Sub(g.start); elapsed >= max(minWindow, 2*mean) {
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
	if changed > 0 || grew {
		g.cond.Broadcast()
	} else {
		g.cond.Signal()
	}
	g.mu.Unlock()
	if changed > 0 && g.onLimit != nil {
		g.onLimit(changed)
	}
}

// pause gives back the slot of a request answered 429, lowers the limit at once (once per
// window: the burst's other 429s were sent under the limit this one lowers), waits d, then
// for room. false when ctx ended; the slot is then taken anyway, for the caller's release.
func (g *gate) pause(ctx context.Context, d time.Duration) bool {
	g.mu.Lock()
	g.inflight--
	changed := 0
	// Every 429 so far is this burst's: the window's close must not halve for them again.
	if g.throttled != nil {
		g.lastThrottled = g.throttled()
	}
	if now := time.Now(); now.Sub(g.lastCut) >= max(minWindow, 2*g.meanLatency()) {
		if g.pace != nil {
			g.setPace(g.pace.throttled(), g.paceLatency)
			changed = g.shown()
		} else if next := g.lim.observe(window{throttled: 1}); next != g.limit {
			g.limit, changed = next, next
		}
		g.lastCut, g.start, g.done, g.latency, g.latencies = now, now, 0, 0, g.latencies[:0]
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

// meanLatency is the current window's mean latency, 0 before any request. Needs g.mu.
func (g *gate) meanLatency() time.Duration {
	if g.done == 0 {
		return 0
	}
	return g.latency / time.Duration(g.done)
}

// stats is what the limit did over the pass, and for a paced gate the rate (starts a second).
func (g *gate) stats() (final, peak int, rate, peakRate float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pace != nil {
		return g.shown(), max(g.peakShown, g.shown()), g.pace.rate, g.pace.peak
	}
	return g.limit, g.lim.peak, 0, 0
}
