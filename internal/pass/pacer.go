package pass

import (
	"math"
	"slices"
	"time"
)

// A gentle pass must leave other clients' latency as it was, and what a
// pass costs them is in the tail: measured here (make bench, 2 cores), a
// pass at 15 % of what the server could take left another client's median
// latency where it was and tripled its 99th percentile (the server's
// garbage collection and run queue, which every request waits in, not a
// queue of the pass's own). So a gentle pass paces its writes at a rate,
// which may be well below one request in flight, and sets the rate by the
// tail of its own requests, which wait in the same places as everyone's:
//   - The server's part of a latency is what it took above the fastest
//     answer seen (the round trip), so the same margins hold at 1 ms and
//     at 100 ms.
//   - Each window of gentleSamples requests gives its tail, the slowest
//     of them above that floor. One window's tail is noise (a collection
//     that happened to fall in it): the pace follows the median of the
//     last tailWindows windows' tails.
//   - The idle tail is the lowest of the first tailWindows windows' tails,
//     at the starting pace, a few percent of what a small server serves.
//   - The rate grows by gentleGrowth while the recent tail keeps within
//     growMargin of the idle tail, and falls by gentleBackoff past
//     backMargin; after the first fall it grows half as fast. growMargin
//     is tight because the tail other clients see grows faster than the
//     pass's own: measured here, a pass whose own tail kept within 1.5 ×
//     idle tripled another client's 99th percentile.
//   - The tail does not take the rate below gentleStart: the idle tail was
//     measured there, so a tail beyond it at that pace is noise.
//   - A 429 halves it, to one a second at the least.
type pacer struct {
	rate   float64 // requests started per second
	growth float64
	peak   float64
	floor  time.Duration   // the fastest answer seen
	idle   time.Duration   // the idle tail above floor; 0: not yet known
	tails  []time.Duration // the last tailWindows windows' tails
}

const (
	// gentleStart is the first rate, requests/s.
	gentleStart = 20.0
	// gentleSamples is a window's size, and tailWindows how many windows
	// the tail is the median of.
	gentleSamples, tailWindows = 50, 3
	gentleGrowth               = 1.25
	// gentleRegrowth is the growth after a fall: half as fast.
	gentleRegrowth = 1 + (gentleGrowth-1)/2
	gentleBackoff  = 0.7
	// growMargin and backMargin bound the recent tail: a factor of the
	// idle tail plus gentleSlack, the jitter of a request's scheduling.
	growMargin, backMargin = 1.25, 2
	gentleSlack            = 250 * time.Microsecond
)

func newPacer() *pacer {
	return &pacer{rate: gentleStart, growth: gentleGrowth, peak: gentleStart}
}

// observe takes one window's latencies and returns the rate for the next.
func (p *pacer) observe(latencies []time.Duration) float64 {
	if len(latencies) == 0 {
		return p.rate
	}
	s := slices.Clone(latencies)
	slices.Sort(s)
	if p.floor == 0 || s[0] < p.floor {
		p.floor = s[0]
	}
	p.tails = append(p.tails, s[len(s)-1]-p.floor)
	if len(p.tails) > tailWindows {
		p.tails = p.tails[1:]
	}
	if len(p.tails) < tailWindows {
		return p.rate
	}
	tail := median(p.tails)
	if p.idle == 0 {
		p.idle = slices.Min(p.tails)
	}
	switch {
	case tail > scale(p.idle, backMargin)+2*gentleSlack:
		p.rate = math.Max(gentleStart, p.rate*gentleBackoff)
		p.growth = gentleRegrowth
	case tail <= scale(p.idle, growMargin)+gentleSlack:
		p.rate *= p.growth
	}
	p.peak = math.Max(p.peak, p.rate)
	return p.rate
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// throttled halves the rate: the server answered 429.
func (p *pacer) throttled() float64 {
	p.rate = math.Max(1, p.rate/2)
	p.growth = gentleRegrowth
	return p.rate
}

func scale(d time.Duration, f float64) time.Duration {
	return time.Duration(float64(d) * f)
}
