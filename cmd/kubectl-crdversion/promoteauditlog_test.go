package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// promote's --audit-log: a fleet's clusters each read their own log
// ({context}), stdin is refused (the gate may read twice), a path that is
// not there fails before any cluster is asked; the printed way on names
// the paths read on the cluster the refusal was met on.
func TestPromoteAuditLogs(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"canary", "prod"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "audit.log"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	each := filepath.Join(dir, "{context}", "audit.log")
	flagsIn := func(context string) *genericclioptions.ConfigFlags {
		f := genericclioptions.NewConfigFlags(false)
		f.Context = &context
		return f
	}
	promote := func(context string, fleet []string, logs ...string) *PromoteOptions {
		return &PromoteOptions{AuditLogs: logs, stepOptions: stepOptions{clusterTarget: clusterTarget{
			configFlags: flagsIn(context), fleet: fleet, fleetFlags: fleetFlags{Parallel: 1}}}}
	}
	for _, tc := range []struct {
		name string
		o    *PromoteOptions
		want string
	}{
		{"a fleet, each its own", promote("", []string{"canary", "prod"}, each), ""},
		{"a fleet, one log for all", promote("", []string{"canary", "prod"}, filepath.Join(dir, "prod", "audit.log")), "put {context} in the path"},
		{"a fleet, one cluster without a log", promote("", []string{"canary", "prod", "dev"}, each), "dev/audit.log: no such file"},
		{"stdin", promote("prod", nil, "-"), "save the log to a file first"},
		{"{context} without --context", promote("", nil, each), "names {context}, and no --context is given"},
		{"{context} with --context", promote("prod", nil, each), ""},
		{"a path not there", promote("", nil, filepath.Join(dir, "gone.log")), "gone.log: no such file"},
		{"-f with no cluster named", &PromoteOptions{AuditLogs: []string{each}, stepOptions: stepOptions{Filename: "crd.yaml"}}, "with -f, name it with --context or --kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.validateAuditLogs()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	if got, want := promote("prod", nil, each).auditLogArgs(), " --audit-log "+filepath.Join(dir, "prod", "audit.log"); got != want {
		t.Errorf("the way on's flags: %q, want %q", got, want)
	}
}
