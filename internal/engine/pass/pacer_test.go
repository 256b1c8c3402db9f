package pass

import (
	"math"
	"testing"
	"time"
)

// tailServer models what other clients feel: its median answer stays put
// under load, while its 99th percentile grows with the rate it is written
// at, by the square of rate/knee (the collections and the run queue every
// request shares), a network's rtt away.
type tailServer struct {
	rtt      time.Duration
	median   time.Duration
	tail     time.Duration // the 99th percentile, idle
	knee     float64       // requests/s at which the tail doubles
	jittered bool          // the idle tail of one window in five twice as long
}

func (s tailServer) tailAt(rate float64) time.Duration {
	return scale(s.tail, 1+math.Pow(rate/s.knee, 2))
}

// window is gentleSamples latencies at rate: two of them in the tail.
func (s tailServer) window(i int, rate float64) []time.Duration {
	tail := s.tailAt(rate)
	if s.jittered && i%5 == 0 {
		tail += s.tail
	}
	lat := make([]time.Duration, gentleSamples)
	for j := range lat {
		lat[j] = s.rtt + s.median
	}
	lat[0], lat[1] = s.rtt+tail, s.rtt+tail
	return lat
}

func TestPacerKeepsTheTail(t *testing.T) {
	local := tailServer{rtt: 500 * time.Microsecond, median: time.Millisecond, tail: 2 * time.Millisecond, knee: 100}
	far, jittery, big := local, local, local
	far.rtt = 100 * time.Millisecond
	jittery.jittered = true
	big.knee = 20000
	for _, tc := range []struct {
		name string
		srv  tailServer
		// over the last 50 of 200 windows: the mean rate at least minRate,
		// and the tail at most maxTail × the idle tail.
		minRate, maxTail float64
	}{
		{"local", local, 50, 1.8},
		{"100 ms away: the same pace", far, 50, 1.8},
		{"a noisy tail", jittery, 40, 1.8},
		{"a large server: it keeps growing", big, 10000, 1.8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPacer()
			rate := p.rate
			var mean, worst float64
			for i := range 200 {
				if i >= 150 {
					mean += rate / 50
					worst = math.Max(worst, float64(tc.srv.tailAt(rate))/float64(tc.srv.tailAt(0)))
				}
				rate = p.observe(tc.srv.window(i, rate))
			}
			if mean < tc.minRate || worst > tc.maxTail {
				t.Errorf("mean rate %.0f/s (want ≥ %.0f), tail up to %.2f× idle (want ≤ %.2f)", mean, tc.minRate, worst, tc.maxTail)
			}
		})
	}
}

// A 429 halves the pace at once, and it never stops.
func TestPacerBacksOffOnThrottling(t *testing.T) {
	p := newPacer()
	for range 10 {
		p.observe(tailServer{median: time.Millisecond, tail: 2 * time.Millisecond, knee: 1000}.window(1, p.rate))
	}
	before := p.rate
	if got := p.throttled(); got != before/2 {
		t.Errorf("a 429 took the rate from %.1f to %.1f, want half", before, got)
	}
	for range 20 {
		p.throttled()
	}
	if p.rate < 1 {
		t.Errorf("rate %.2f after many 429s, want at least 1/s", p.rate)
	}
}
