package migrate

import (
	"math"
	"testing"
	"time"
)

// server models an API server a network away: every request takes rtt
// plus its share of a server that completes capacity requests a second.
// With limit requests in flight it answers min(limit/rtt, capacity) a
// second, each after max(rtt, limit/capacity): Little's law. Above seats
// in flight (API Priority and Fairness) the excess is answered 429.
type server struct {
	capacity float64
	rtt      time.Duration
	seats    int
}

func (s server) window(limit int) window {
	const d = 500 * time.Millisecond
	inflight := limit
	throttled := 0
	if s.seats > 0 && limit > s.seats {
		inflight, throttled = s.seats, limit-s.seats
	}
	latency := math.Max(s.rtt.Seconds(), float64(inflight)/s.capacity)
	done := int(float64(inflight) / latency * d.Seconds())
	return window{done: done, elapsed: d, latency: time.Duration(latency * float64(time.Second)), throttled: throttled}
}

func TestLimiterFindsWhatTheServerGives(t *testing.T) {
	for _, tc := range []struct {
		name   string
		srv    server
		max    int
		gentle bool
		// the limit after 30 windows must give at least minShare of the
		// server's capacity, with latency at most maxInflation × the rtt.
		minShare, maxInflation float64
	}{
		{"local server", server{capacity: 1000, rtt: time.Millisecond}, 256, false, 0.99, 2.5},
		{"10 ms away", server{capacity: 900, rtt: 10 * time.Millisecond}, 256, false, 0.99, 2.1},
		{"100 ms away", server{capacity: 500, rtt: 100 * time.Millisecond}, 256, false, 0.99, 2.1},
		{"150 ms away, fast server: the bound caps it", server{capacity: 5000, rtt: 150 * time.Millisecond}, 256, false, 0.34, 1.01},
		{"gentle, local", server{capacity: 1000, rtt: time.Millisecond}, 256, true, 0.99, 4.1},
		{"gentle, 100 ms away", server{capacity: 500, rtt: 100 * time.Millisecond}, 256, true, 0.99, 1.3},
		{"serial by request", server{capacity: 1000, rtt: 10 * time.Millisecond}, 1, false, 0.1, 1.01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimiter(tc.max, tc.gentle)
			limit := int(l.limit)
			for range 30 {
				limit = l.observe(tc.srv.window(limit))
			}
			w := tc.srv.window(limit)
			share := float64(w.done) / w.elapsed.Seconds() / tc.srv.capacity
			inflation := w.latency.Seconds() / tc.srv.rtt.Seconds()
			if share < tc.minShare || inflation > tc.maxInflation || limit > tc.max {
				t.Errorf("limit %d: %.2f of capacity (want ≥ %.2f), latency %.2f× the rtt (want ≤ %.2f)", limit, share, tc.minShare, inflation, tc.maxInflation)
			}
		})
	}
}

// The limit reaches what fills a 100 ms path within a few windows: it
// doubles while the throughput follows.
func TestLimiterGrowsFast(t *testing.T) {
	srv := server{capacity: 500, rtt: 100 * time.Millisecond}
	l := newLimiter(256, false)
	limit := int(l.limit)
	var trace []int
	for range 8 {
		limit = l.observe(srv.window(limit))
		trace = append(trace, limit)
	}
	if want := []int{2, 4, 8, 16, 32, 64, 100, 100}; !equalInts(trace, want) {
		t.Errorf("limits %v, want %v", trace, want)
	}
}

// A 429 halves the limit, and it does not grow straight back into the
// throttle: with 20 seats the limit stays near them.
func TestLimiterBacksOffOnThrottling(t *testing.T) {
	srv := server{capacity: 500, rtt: 100 * time.Millisecond, seats: 20}
	l := newLimiter(256, false)
	limit := int(l.limit)
	throttledWindows := 0
	for range 60 {
		w := srv.window(limit)
		if w.throttled > 0 {
			throttledWindows++
		}
		limit = l.observe(w)
	}
	if limit > 40 || throttledWindows > 30 {
		t.Errorf("limit %d after 60 windows, %d of them throttled", limit, throttledWindows)
	}
	before := limit
	if next := l.observe(window{done: 10, elapsed: time.Second, latency: 100 * time.Millisecond, throttled: 1}); next > max(before/2, 1) {
		t.Errorf("a 429 took the limit from %d to %d, want at most half", before, next)
	}
}

// A window with nothing done (every request still in flight) keeps the
// limit as it is.
func TestLimiterIgnoresEmptyWindows(t *testing.T) {
	l := newLimiter(256, false)
	if got := l.observe(window{elapsed: time.Second}); got != startLimit {
		t.Errorf("limit %d after an empty window, want %d", got, startLimit)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
