package fleet

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// State is where a cluster's work ended.
type State string

const (
	// Done: the work finished and needs nothing more.
	Done State = "done"
	// Attention: the work ran and needs a person (refused, failed
	// objects, not pruned).
	Attention State = "attention"
	// Failed: the work ended in an error (unreachable, forbidden).
	Failed State = "error"
	// NotStarted: nothing was sent to the cluster.
	NotStarted State = "not started"
)

// Row is one cluster's outcome.
type Row[T any] struct {
	Context string
	State   State
	// Why says, beyond the state, what stopped it (empty when done).
	Why   string
	Value T
	Took  time.Duration
}

// Work is what runs on one cluster: its value, where it ended, and why.
type Work[T any] func(ctx context.Context, context string) (T, State, string)

// Run runs work on each context, in the order given. The first runs alone;
// once it is done the rest run, at most parallel at once, in order. After a
// cluster ends not done, no further cluster starts (those running finish):
// a fault the canary or an early cluster shows is not carried to the rest.
// Cancelling ctx starts nothing more either.
func Run[T any](ctx context.Context, contexts []string, parallel int, work Work[T]) []Row[T] {
	rows := make([]Row[T], len(contexts))
	for i, name := range contexts {
		rows[i] = Row[T]{Context: name, State: NotStarted}
	}
	if len(contexts) == 0 {
		return rows
	}
	one := func(i int) bool {
		start := time.Now()
		v, st, why := work(ctx, contexts[i])
		rows[i].Value, rows[i].State, rows[i].Why, rows[i].Took = v, st, why, time.Since(start)
		return st == Done
	}
	if !one(0) {
		notStarted(rows[1:], fmt.Sprintf("the canary %q is not done", contexts[0]))
		return rows
	}
	var (
		mu      sync.Mutex
		stopped string // why no cluster starts any more
		wg      sync.WaitGroup
		slots   = make(chan struct{}, max(parallel, 1))
	)
	for i := 1; i < len(contexts); i++ {
		slots <- struct{}{}
		mu.Lock()
		why := stopped
		mu.Unlock()
		if why == "" && ctx.Err() != nil {
			why = "interrupted"
		}
		if why != "" {
			<-slots
			rows[i].Why = why
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if !one(i) {
				mu.Lock()
				if stopped == "" {
					stopped = fmt.Sprintf("%q is not done", contexts[i])
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return rows
}

func notStarted[T any](rows []Row[T], why string) {
	for i := range rows {
		rows[i].Why = why
	}
}

// AllDone reports whether every cluster is done.
func AllDone[T any](rows []Row[T]) bool {
	for _, r := range rows {
		if r.State != Done {
			return false
		}
	}
	return true
}
