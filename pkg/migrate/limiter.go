package migrate

import (
	"math"
	"time"
)

// A pass keeps as many requests in flight as the path to the API server
// and the server itself can take, and no more: the limit adapts while the
// pass runs, the way TCP's BBR sizes its window. It keeps two estimates,
// the best throughput of the recent windows (what the server gives) and
// the lowest latency (the round trip with nothing queued), and sets the
// limit to their product — the requests that fill the path, Little's law —
// times a gain:
//   - below that product every request is answered at the idle latency and
//     throughput is the limit over it, so a gain above 1 grows the limit by
//     that factor each window (the slow start comes for free);
//   - past it the server is the bottleneck, throughput stops growing, and
//     the limit settles at gain × what fills the path: the excess waits in
//     the server's queue, adding (gain - 1) × the idle latency for everyone.
//
// The default gain of 2 keeps the server busy when its throughput still
// grows a little past the knee; gentle's 1.25 keeps the queue small, so
// other clients barely feel the pass. A 429 (API Priority and Fairness, or
// a server shedding load) halves the limit and forgets the throughput seen,
// so it has to be earned again.
type limiter struct {
	max   int
	gain  float64
	limit float64

	tput windowedMax // objects/s, best of the recent windows
	// idle is the lowest latency of the pass, in seconds. It is never
	// forgotten: once the limit fills the path, every window's latency
	// includes the queue the limit keeps, and an estimate that followed it
	// would grow the limit without end.
	idle float64
	peak int
	// holds after a 429: the limit does not grow again in the windows
	// right after it.
	hold int
}

const (
	startLimit = 1
	// recentWindows is how far back the estimates look: long enough to
	// ride out a slow window, short enough to follow a server whose load
	// changes under the pass.
	recentWindows = 20
	gainDefault   = 2.0
	gainGentle    = 1.25
)

func newLimiter(maxLimit int, gentle bool) *limiter {
	l := &limiter{max: max(maxLimit, 1), gain: gainDefault}
	if gentle {
		l.gain = gainGentle
	}
	l.limit = math.Min(startLimit, float64(l.max))
	l.peak = int(l.limit)
	return l
}

// window is what the requests completed in one measuring window saw.
type window struct {
	done      int
	elapsed   time.Duration
	latency   time.Duration // mean of the completed requests
	throttled int           // answers 429 Too Many Requests
}

// observe takes a window and returns the limit for the next one.
func (l *limiter) observe(w window) int {
	switch {
	case w.throttled > 0:
		l.limit = math.Max(1, l.limit/2)
		l.tput.reset()
		l.hold = 2
	case w.done == 0 || w.elapsed <= 0 || w.latency <= 0:
	default:
		l.tput.add(float64(w.done) / w.elapsed.Seconds())
		if lat := w.latency.Seconds(); l.idle == 0 || lat < l.idle {
			l.idle = lat
		}
		next := l.gain * l.tput.get() * l.idle
		if l.hold > 0 {
			l.hold--
			next = math.Min(next, l.limit)
		}
		// Never more than double in a window: one lucky window must not
		// flood the server.
		l.limit = math.Max(1, math.Min(next, 2*l.limit))
	}
	l.limit = math.Min(l.limit, float64(l.max))
	// Up, not to the nearest: a limit of 1 × 1.25 must become 2, or gentle
	// would never leave 1.
	n := int(math.Ceil(l.limit - 1e-9))
	l.peak = max(l.peak, n)
	return max(n, 1)
}

// windowedMax is the largest of the last recentWindows values.
type windowedMax struct{ vals []float64 }

func (m *windowedMax) add(v float64) {
	m.vals = append(m.vals, v)
	if len(m.vals) > recentWindows {
		m.vals = m.vals[1:]
	}
}

func (m *windowedMax) get() float64 {
	best := 0.0
	for _, v := range m.vals {
		best = math.Max(best, v)
	}
	return best
}

func (m *windowedMax) reset() { m.vals = m.vals[:0] }
