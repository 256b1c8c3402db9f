package pass

import (
	"math"
	"time"
)

// limiter finds how many requests in flight the path and server can use, the way TCP finds a
// path's capacity: it doubles the limit each window while throughput grows by climbGain and goes
// back when a step brings none. Every probeEvery settled windows it probes a quarter up or half
// down; a step down stays while throughput keeps within keepShare of the recent best, shedding
// requests that only queue. A 429 halves it, and the limit that drew it is a ceiling for a cooldown
// doubling per 429 (to maxCooldown): each 429 costs a Retry-After of a second.
type limiter struct {
	max    int
	limit  float64
	growth float64

	state               probe
	prevLimit, prevTput float64
	best                windowedMax // throughput, objects/s
	steady              int         // settled windows since the last probe
	downNext            bool
	peak                int

	ceiling  float64 // the limit that drew the last 429; 0: none
	cooldown int     // windows the ceiling holds
	quiet    int     // windows since the last 429
}

type probe int

const (
	settled probe = iota
	probingUp
	probingDown
)

const (
	// startLimit was measured (make bench, 2 cores): 32 writers keep a local server busy and hide
	// a 10 ms round trip; farther servers double from there.
	startLimit    = 32
	startRTT      = 10 * time.Millisecond // the round trip startLimit was measured at, and below
	climbGain     = 1.05                  // the throughput a step up must add to count
	keepShare     = 0.95                  // the throughput a step down may keep and stay
	probeEvery    = 5                     // settled windows between probes
	recentWindows = 20                    // how far back the best throughput looks
	// firstCooldown and maxCooldown bound the windows a 429's ceiling holds.
	firstCooldown, maxCooldown = 20, 640
)

func newLimiter(maxLimit int) *limiter {
	l := &limiter{max: max(maxLimit, 1), growth: 2, limit: startLimit}
	l.limit = math.Min(l.limit, float64(l.max))
	l.peak = int(l.limit)
	return l
}

// startFor scales the first limit to a round trip longer than startRTT: by Little's law the same
// throughput needs that many more in flight, and each doubling step costs two round trips.
func (l *limiter) startFor(rtt time.Duration) int {
	if rtt > startRTT {
		l.limit = math.Min(math.Round(startLimit*float64(rtt)/float64(startRTT)), float64(l.max))
	}
	return l.result()
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
	if w.throttled > 0 {
		l.ceiling, l.quiet = l.limit, 0
		l.cooldown = min(max(firstCooldown, 2*l.cooldown), maxCooldown)
		l.limit = math.Max(1, math.Floor(l.limit/2))
		l.growth, l.state, l.prevTput, l.steady = 1.25, settled, 0, 0
		l.best.reset()
		return l.result()
	}
	if w.done == 0 || w.elapsed <= 0 || w.latency <= 0 {
		return l.result()
	}
	tput := float64(w.done) / w.elapsed.Seconds()
	l.best.add(tput)
	next := l.limit
	switch {
	case l.prevTput == 0:
		next, l.state = l.limit*l.growth, probingUp // the first window: climb
	case l.state == probingUp && tput >= climbGain*l.prevTput:
		next = l.limit * l.growth // the step up paid: another
	case l.state == probingUp:
		next, l.growth, l.state = l.prevLimit, 1.25, settled
	case l.state == probingDown && tput < keepShare*l.best.get():
		next, l.state = l.prevLimit, settled
	case l.state == probingDown:
		l.state = settled
	default:
		if l.steady++; l.steady >= probeEvery {
			l.steady = 0
			if l.downNext {
				next, l.state = math.Floor(l.limit/2), probingDown
			} else {
				next, l.state = l.limit*l.growth, probingUp
			}
			l.downNext = !l.downNext
		}
	}
	if l.ceiling > 0 {
		if l.quiet++; l.quiet >= l.cooldown {
			l.ceiling = 0
		} else if math.Ceil(next-1e-9) >= l.ceiling && next > l.limit {
			next, l.state = math.Max(l.limit, l.ceiling-1), settled
		}
	}
	l.prevLimit, l.prevTput = l.limit, tput
	l.limit = math.Max(1, math.Min(next, float64(l.max)))
	return l.result()
}

func (l *limiter) result() int {
	// Round up: 1 × 1.25 must become 2, or the limit would never leave 1.
	n := max(int(math.Ceil(l.limit-1e-9)), 1)
	l.limit = float64(n)
	l.peak = max(l.peak, n)
	return n
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
