package main

import (
	"fmt"
	"io"
	"time"
)

// countdownEvery is how often a countdown prints a line where it cannot
// rewrite one (logs, CI): often enough to show the run is alive, seldom
// enough not to fill a log.
const countdownEvery = 10 * time.Second

// countdownTo shows the time left of a wait on w: one line rewritten each
// second on a terminal, a line every countdownEvery elsewhere, nothing when
// quiet. The wait's start and end are said by its caller; stop ends the
// countdown and leaves no line of it behind on a terminal.
func countdownTo(w io.Writer, terminal, quiet bool) func(what string, until time.Time) (stop func()) {
	return func(what string, until time.Time) func() {
		if quiet {
			return func() {}
		}
		every := countdownEvery
		if terminal {
			every = time.Second
		}
		done, finished := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(finished)
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-done:
					if terminal {
						fmt.Fprint(w, "\r\x1b[K")
					}
					return
				case <-t.C:
					left := time.Until(until).Round(time.Second)
					if left <= 0 {
						continue
					}
					if terminal {
						fmt.Fprintf(w, "\r\x1b[K%s: %s left", what, left)
					} else {
						fmt.Fprintf(w, "%s: %s left\n", what, left)
					}
				}
			}
		}()
		return func() {
			close(done)
			<-finished
		}
	}
}
