package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A second pass under the same title (after the switch grace) counts its
// rate from its own start, not from the first pass's: no "0/s, ETA 20m".
func TestProgressRestartsWithANewPass(t *testing.T) {
	var out bytes.Buffer
	p := newProgressBar(&out, "migrate widgets", false, false)
	p.interval = 0
	p.Update(150, 150)
	p.start = time.Now().Add(-10 * time.Second) // the first pass, then a wait
	out.Reset()
	p.Update(1, 150)
	if line := out.String(); !strings.Contains(line, "1/150 objects") || strings.Contains(line, " 0/s") || !strings.Contains(line, "ETA 0s") {
		t.Errorf("progress of the second pass: %q", line)
	}
}

// A terminal that reports no width (0 columns) still gets a bar with a
// width of its own: not an empty one.
func TestProgressBarHasAWidthWhereTheTerminalReportsNone(t *testing.T) {
	var out bytes.Buffer
	p := newProgressBar(&out, "migrate widgets", true, false)
	p.Update(0, 10)
	if got := out.String(); !strings.Contains(got, "|"+strings.Repeat(" ", defaultBarWidth)+"|") {
		t.Errorf("the bar: %q, want %d columns wide", got, defaultBarWidth)
	}
}
