package migration

import (
	"testing"
	"time"
)

// The gate's time rule, as usage counts a write (after the cut): managedFields
// times are whole seconds, so a write in the prune's second is a client's.
func TestClientsAfterThePrune(t *testing.T) {
	pruned := time.Date(2026, 5, 1, 10, 0, 5, 400_000_000, time.UTC)
	second := func(s int) time.Time { return time.Date(2026, 5, 1, 10, 0, s, 0, time.UTC) }
	for _, tc := range []struct {
		name   string
		pruned time.Time
		write  time.Time
		client bool
	}{
		{"the second before the prune", pruned, second(4), false},
		{"the prune's own second", pruned, second(5), true},
		{"the prune's own second, as managedFields dates the prune", second(5), second(5), true},
		{"the second after", pruned, second(6), true},
		{"no prune: every write", time.Time{}, second(1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cut := clientsAfter(tc.pruned)
			if got := cut.IsZero() || tc.write.After(cut); got != tc.client {
				t.Errorf("a write at %s, the prune at %s: client %v, want %v", tc.write.Format(time.TimeOnly), tc.pruned.Format("15:04:05.000"), got, tc.client)
			}
		})
	}
}
