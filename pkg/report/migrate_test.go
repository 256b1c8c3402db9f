package report

import (
	"testing"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

func TestPassTime(t *testing.T) {
	for _, tc := range []struct {
		name           string
		duration, took time.Duration
		objects        int64
		want           string
	}{
		{"the pass is the migration", 4668 * time.Millisecond, 4500 * time.Millisecond, 3000, "4.668s, 667/s"},
		// The grace waited out and a second pass: 1,000 objects did not go at 92/s.
		{"waits around the pass", 10925 * time.Millisecond, 1250 * time.Millisecond, 1000, "10.925s in all; the pass 1.25s, 800/s"},
		{"a pass under a second has no rate", 10 * time.Second, 15 * time.Millisecond, 5, "10s"},
		{"no pass timed: the whole migration's rate", 3 * time.Second, 0, 600, "3s, 200/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &results.Result{Duration: tc.duration}
			r.Took, r.Rewritten = tc.took, tc.objects
			if got := passTime(r); got != tc.want {
				t.Errorf("passTime = %q, want %q", got, tc.want)
			}
		})
	}
}
