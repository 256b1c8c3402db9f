package main

import (
	"strings"
	"testing"
	"time"
)

// --group narrows --all; beside named CRDs it is refused, since a named
// CRD of another group would be dropped without a word.
func TestMigrateGroupGoesWithAll(t *testing.T) {
	for _, tc := range []struct {
		name   string
		all    bool
		names  []string
		groups []string
		want   string // "" for valid
	}{
		{"--all --group", true, nil, []string{"example.com"}, ""},
		{"--all, two groups", true, nil, []string{"example.com", "pki.example.com"}, ""},
		{"names --group", false, []string{"widgets.example.com"}, []string{"example.com"}, "--group goes with --all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &MigrateOptions{
				migrationOptions: migrationOptions{Names: tc.names, Concurrency: 8, PageSize: 500, WaitTimeout: time.Minute, SwitchGrace: time.Minute},
				All:              tc.all, Groups: tc.groups, Prune: true, Via: viaPlugin, fleetFlags: fleetFlags{Parallel: 1},
			}
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}
