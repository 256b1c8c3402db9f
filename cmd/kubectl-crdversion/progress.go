package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressBar shows a long run on stderr: a bar with count/total, rate and
// ETA on a terminal, a line every few seconds elsewhere (logs, CI), nothing
// when quiet. Results never go through it.
type progressBar struct {
	mu       sync.Mutex
	bar      *progressbar.ProgressBar
	w        io.Writer
	title    string
	limit    int
	lastDone int64
	start    time.Time
	last     time.Time
	interval time.Duration
}

// newProgressBar starts showing progress for title.
func newProgressBar(w io.Writer, title string, terminal, quiet bool) *progressBar {
	p := &progressBar{title: title, start: time.Now(), interval: 5 * time.Second}
	switch {
	case quiet:
	case terminal:
		p.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(title),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("obj"),
			progressbar.OptionSetPredictTime(true),
			barWidth(w),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	default:
		p.w = w
		p.last = p.start
	}
	return p
}

// barWidth fills the terminal's width; a terminal that reports none (0
// columns: a serial console, some CI runners' ptys) gets a bar of its own
// width, not an empty one.
func barWidth(w io.Writer) progressbar.Option {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return progressbar.OptionFullWidth()
		}
	}
	return progressbar.OptionSetWidth(defaultBarWidth)
}

// defaultBarWidth is the bar's width where the terminal reports none.
const defaultBarWidth = 30

// Update reports done objects of an estimated total.
func (p *progressBar) Update(done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.bar != nil:
		if p.bar.GetMax64() != total {
			p.bar.ChangeMax64(total)
		}
		_ = p.bar.Set64(done)
	case p.w != nil:
		now := time.Now()
		if done < p.lastDone {
			// A new pass under the same title (the second pass after the
			// switch grace): its rate counts from its own start.
			p.start, p.last = now, now
		}
		p.lastDone = done
		if now.Sub(p.last) < p.interval {
			return
		}
		p.last = now
		elapsed := now.Sub(p.start)
		rate := float64(done) / elapsed.Seconds()
		eta := "?"
		if rate > 0 && total >= done {
			eta = time.Duration(float64(total-done) / rate * float64(time.Second)).Round(time.Second).String()
		}
		inflight := ""
		if p.limit > 0 {
			inflight = fmt.Sprintf(", %d in flight", p.limit)
		}
		fmt.Fprintf(p.w, "%s: %d/%d objects, %.0f/s%s, ETA %s\n", p.title, done, total, rate, inflight, eta)
	}
}

// SetLimit shows the adaptive limit of requests in flight.
func (p *progressBar) SetLimit(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limit = n
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("%s (%d in flight)", p.title, n))
	}
}

// Finish removes the bar.
func (p *progressBar) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// taskBars shows the progress of passes that run one after another, each
// under its own title: a new title finishes the bar before it.
type taskBars struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	title    string
	current  *progressBar
}

// newTaskBars shows the progress of a sequence of passes on w.
func newTaskBars(w io.Writer, terminal bool) *taskBars {
	return &taskBars{w: w, terminal: terminal}
}

// Update reports done objects of an estimated total for the task title.
func (t *taskBars) Update(title string, done, total int64) {
	t.mu.Lock()
	if title != t.title || t.current == nil {
		if t.current != nil {
			t.current.Finish()
		}
		t.title, t.current = title, newProgressBar(t.w, title, t.terminal, false)
	}
	p := t.current
	t.mu.Unlock()
	p.Update(done, total)
}

// Finish removes the last bar.
func (t *taskBars) Finish() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.current != nil {
		t.current.Finish()
	}
}
