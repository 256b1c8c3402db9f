package main

import (
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// A flag that keeps one value, given two, is refused before anything is
// sent; a fleet command takes several --context; the same value twice is
// one value.
func TestRefuseRepeated(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for taken
	}{
		{[]string{"prune", "widgets", "--context", "canary", "--context", "prod"}, "--context given 2 values (canary, prod): kubectl crdversion prune takes one (status, check, migrate, verify, promote and rollback take several"},
		{[]string{"verify", "widgets", "--context", "canary", "--context", "prod"}, ""},
		{[]string{"migrate", "--all", "--context", "canary", "--context", "prod"}, ""},
		{[]string{"status", "--context", "canary", "--context", "prod"}, ""},
		{[]string{"check", "-f", "new.yaml", "--context", "a", "--context", "b"}, ""},
		{[]string{"promote", "widgets", "v1", "--to", "bridge", "--to", "deprecated"}, "--to given 2 values (bridge, deprecated)"},
		{[]string{"migrate", "--all", "--context", "prod", "--context", "prod"}, ""},
		{[]string{"convert", "-f", "a.yaml", "-f", "b.yaml"}, ""},
	} {
		root := NewCmdRoot(genericiooptions.NewTestIOStreamsDiscard())
		c, rest, err := root.Find(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ParseFlags(rest); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		err = refuseRepeated(c)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}
