package pass

import (
	"math"
	"slices"
	"time"
)

// pacer sets a gentle pass's rate. What a pass costs other clients is in the latency tail:
// measured (make bench, 2 cores), a pass at 15 % of capacity left another client's median as it
// was and tripled its 99th percentile. So the rate follows the pass's own tail above the fastest
// answer seen: the median of the last tailWindows windows' slowest requests. It grows while that
// tail keeps within growMargin of the idle tail (the lowest of the first windows') and falls by
// gentleBackoff past backMargin, not below gentleStart; after a fall it grows half as fast.
// growMargin is tight as others' tail grows faster than the pass's own. A 429 halves the rate.
type pacer struct {
	rate   float64 // requests started per second
	growth float64
	peak   float64
	floor  time.Duration   // the fastest answer seen
	idle   time.Duration   // the idle tail above floor; 0: not yet known
	tails  []time.Duration // the last tailWindows windows' tails
}

const (
	gentleStart = 20.0 // the first rate, requests/s
	// gentleSamples is a window's size; tailWindows how many windows the tail is the median of.
	gentleSamples, tailWindows = 50, 3
	gentleGrowth               = 1.25
	// gentleRegrowth is the growth after a fall: half as fast.
	gentleRegrowth = 1 + (gentleGrowth-1)/2
	gentleBackoff  = 0.7
	// The margins scale the idle tail, plus gentleSlack for a request's scheduling jitter.
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
