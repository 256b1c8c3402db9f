package fleet

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		contexts []string
		parallel int
		notDone  map[string]State
		want     []State
	}{
		{name: "all done", contexts: []string{"a", "b", "c"}, parallel: 1,
			want: []State{Done, Done, Done}},
		{name: "the canary refused: nothing else starts", contexts: []string{"a", "b", "c"}, parallel: 4,
			notDone: map[string]State{"a": Attention}, want: []State{Attention, NotStarted, NotStarted}},
		{name: "the canary unreachable", contexts: []string{"a", "b"}, parallel: 1,
			notDone: map[string]State{"a": Failed}, want: []State{Failed, NotStarted}},
		{name: "a later cluster stops the ones after it", contexts: []string{"a", "b", "c", "d"}, parallel: 1,
			notDone: map[string]State{"b": Failed}, want: []State{Done, Failed, NotStarted, NotStarted}},
		{name: "one cluster", contexts: []string{"a"}, parallel: 1, want: []State{Done}},
		{name: "none", contexts: nil, parallel: 1, want: []State{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			var mu sync.Mutex
			rows := Run(t.Context(), tc.contexts, tc.parallel, func(_ context.Context, name string) (string, State, string) {
				mu.Lock()
				ran = append(ran, name)
				mu.Unlock()
				if st, ok := tc.notDone[name]; ok {
					return name, st, "because"
				}
				return name, Done, ""
			})
			got := []State{}
			for i, r := range rows {
				got = append(got, r.State)
				if r.Context != tc.contexts[i] {
					t.Errorf("row %d is %s, want %s: rows keep the order given", i, r.Context, tc.contexts[i])
				}
				if r.State == NotStarted && (r.Why == "" || slices.Contains(ran, r.Context)) {
					t.Errorf("%s not started, but why %q, ran %v", r.Context, r.Why, ran)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("states %v, want %v", got, tc.want)
			}
			if AllDone(rows) != !slices.ContainsFunc(tc.want, func(s State) bool { return s != Done }) {
				t.Error("AllDone disagrees with the rows")
			}
		})
	}
}

// The canary runs alone, and no more than parallel clusters after it.
func TestRunBoundsClustersAtOnce(t *testing.T) {
	contexts := []string{"canary", "b", "c", "d", "e", "f", "g"}
	for _, parallel := range []int{1, 3} {
		var now, peak atomic.Int32
		var canaryAlone atomic.Bool
		canaryAlone.Store(true)
		release := make(chan struct{})
		started := make(chan string, len(contexts))
		done := make(chan []Row[int])
		go func() {
			done <- Run(t.Context(), contexts, parallel, func(_ context.Context, name string) (int, State, string) {
				n := now.Add(1)
				defer now.Add(-1)
				if name == "canary" && n != 1 {
					canaryAlone.Store(false)
				}
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				started <- name
				if name != "canary" {
					<-release
				}
				return 0, Done, ""
			})
		}()
		// Each release lets one cluster end, and so one more start.
		for range contexts[1:] {
			<-started
			release <- struct{}{}
		}
		<-started
		rows := <-done
		if !AllDone(rows) {
			t.Errorf("parallel %d: not all done: %+v", parallel, rows)
		}
		if int(peak.Load()) > parallel || !canaryAlone.Load() {
			t.Errorf("parallel %d: %d at once (canary alone: %v)", parallel, peak.Load(), canaryAlone.Load())
		}
	}
}

// An interrupt starts nothing more.
func TestRunStopsOnInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	rows := Run(ctx, []string{"a", "b", "c"}, 1, func(_ context.Context, name string) (int, State, string) {
		cancel()
		return 0, Done, ""
	})
	if rows[0].State != Done || rows[1].State != NotStarted || rows[1].Why != "interrupted" {
		t.Errorf("rows %+v, want a done and the rest not started: interrupted", rows)
	}
}
