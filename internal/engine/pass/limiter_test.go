package pass

import (
	"math"
	"testing"
	"time"
)

// server models an API server a network away: every request takes rtt
// plus its share of a server that completes capacity requests a second.
// With limit requests in flight it answers min(limit/rtt, capacity) a
// second, each after max(rtt, limit/capacity): Little's law. Above seats
// in flight (API Priority and Fairness) the excess is answered 429. With a
// knee, throughput grows gradually instead, capacity × limit/(limit+knee),
// as where client and server share a few cores.
type server struct {
	capacity float64
	rtt      time.Duration
	seats    int
	knee     float64
}

func (s server) window(limit int) window {
	const d = 500 * time.Millisecond
	inflight := limit
	throttled := 0
	if s.seats > 0 && limit > s.seats {
		inflight, throttled = s.seats, limit-s.seats
	}
	latency := math.Max(s.rtt.Seconds(), float64(inflight)/s.capacity)
	if s.knee > 0 {
		latency = (float64(inflight) + s.knee) / s.capacity
	}
	done := int(float64(inflight) / latency * d.Seconds())
	return window{done: done, elapsed: d, latency: time.Duration(latency * float64(time.Second)), throttled: throttled}
}

func TestLimiterFindsWhatTheServerGives(t *testing.T) {
	for _, tc := range []struct {
		name string
		srv  server
		max  int
		// after 80 windows the limit must give at least minShare of the
		// server's capacity, with latency at most maxInflation × the
		// latency of one request alone.
		minShare, maxInflation float64
	}{
		{"local server", server{capacity: 1000, rtt: time.Millisecond}, 256, 0.99, 2.5},
		{"10 ms away", server{capacity: 900, rtt: 10 * time.Millisecond}, 256, 0.95, 2.1},
		{"100 ms away", server{capacity: 500, rtt: 100 * time.Millisecond}, 256, 0.95, 2.1},
		{"150 ms away, fast server: the bound caps it", server{capacity: 5000, rtt: 150 * time.Millisecond}, 256, 0.32, 1.01},
		{"soft knee: 2 cores shared by client and server", server{capacity: 1200, knee: 4}, 256, 0.9, 14},
		{"serial by request", server{capacity: 1000, rtt: 10 * time.Millisecond}, 1, 0.1, 1.01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLimiter(tc.max)
			limit := int(l.limit)
			idle := tc.srv.window(1).latency.Seconds()
			// The last 20 windows, probes included, on average.
			var share, inflation float64
			for i := range 100 {
				w := tc.srv.window(limit)
				if i >= 80 {
					share += float64(w.done) / w.elapsed.Seconds() / tc.srv.capacity / 20
					inflation += w.latency.Seconds() / idle / 20
				}
				limit = l.observe(w)
			}
			if share < tc.minShare || inflation > tc.maxInflation || limit > tc.max {
				t.Errorf("limit %d: %.2f of capacity (want ≥ %.2f), latency %.2f× idle (want ≤ %.2f)", limit, share, tc.minShare, inflation, tc.maxInflation)
			}
		})
	}
}

// The limit reaches what fills a 100 ms path within a few windows: it
// doubles from 32 while the throughput follows, and steps back from the
// step that brought nothing.
func TestLimiterGrowsFast(t *testing.T) {
	srv := server{capacity: 500, rtt: 100 * time.Millisecond}
	l := newLimiter(256)
	limit := int(l.limit)
	var trace []int
	for range 3 {
		limit = l.observe(srv.window(limit))
		trace = append(trace, limit)
	}
	if want := []int{64, 128, 64}; !equalInts(trace, want) {
		t.Errorf("limits %v, want %v", trace, want)
	}
}

// A 429 halves the limit, and it does not grow straight back into the
// throttle: with 20 seats the limit stays near them.
func TestLimiterBacksOffOnThrottling(t *testing.T) {
	srv := server{capacity: 500, rtt: 100 * time.Millisecond, seats: 20}
	l := newLimiter(256)
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

// Held to few seats, the limit learns the ceiling: 429s come ever more
// rarely (each costs its request a Retry-After), not every few windows.
func TestLimiterLearnsAFewSeats(t *testing.T) {
	for _, tc := range []struct {
		seats, maxThrottled int
	}{{1, 8}, {2, 8}, {20, 10}} {
		srv := server{capacity: 500, rtt: 5 * time.Millisecond, seats: tc.seats}
		l := newLimiter(256)
		limit, throttled := int(l.limit), 0
		for range 1000 {
			w := srv.window(limit)
			if w.throttled > 0 {
				throttled++
			}
			limit = l.observe(w)
		}
		if throttled > tc.maxThrottled || limit > tc.seats {
			t.Errorf("%d seats: %d of 1000 windows throttled (want ≤ %d), limit %d at the end", tc.seats, throttled, tc.maxThrottled, limit)
		}
	}
}

// A window with nothing done (every request still in flight) keeps the
// limit as it is.
func TestLimiterIgnoresEmptyWindows(t *testing.T) {
	l := newLimiter(256)
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

// The first limit scales with a round trip longer than the one startLimit
// was measured at, within the bound.
func TestLimiterStartsForTheRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		rtt  time.Duration
		max  int
		want int
	}{
		{0, 256, 32},
		{time.Millisecond, 256, 32},
		{10 * time.Millisecond, 256, 32},
		{50 * time.Millisecond, 256, 160},
		{100 * time.Millisecond, 256, 256},
		{100 * time.Millisecond, 64, 64},
	} {
		if got := newLimiter(tc.max).startFor(tc.rtt); got != tc.want {
			t.Errorf("rtt %s, max %d: start %d, want %d", tc.rtt, tc.max, got, tc.want)
		}
	}
}
