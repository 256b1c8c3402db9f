package e2e

import (
	"maps"
	"strings"
	"testing"
)

// Bad input: one `error: ...` line on stderr, nothing on stdout, exit 1, no
// stack trace, and the cluster untouched.
func TestBadInput(t *testing.T) {
	e := newEnv(t, demoObjects)
	before := e.crdVersions()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown CRD", []string{"status", "nosuchthings"}, `error: customresourcedefinition "nosuchthings" not found`},
		{"unknown flag", []string{"status", "--bogus"}, "error: unknown flag: --bogus"},
		{"unknown flag of migrate", []string{"migrate", "--bogus"}, "error: unknown flag: --bogus"},
		{"negative rate cap", []string{"migrate", "--all", "--qps", "-1"}, "error: --qps and --burst must not be negative"},
		{"concurrency past the cap", []string{"migrate", "--all", "--concurrency=2147483647"}, "error: --concurrency must be between 1 and 1024"},
		{"verify's concurrency past the cap", []string{"verify", "certificates.pki.example.com", "--concurrency=100000"}, "error: --concurrency must be between 1 and 1024"},
		{"negative switch grace", []string{"migrate", "--all", "--switch-grace=-1s"}, "error: --wait-timeout and --switch-grace must not be negative"},
		{"negative wait timeout", []string{"migrate", "--all", "--wait-timeout=-5s"}, "error: --wait-timeout and --switch-grace must not be negative"},
		{"malformed selector", []string{"status", "-l", "a in (b"}, `error: invalid selector "a in (b"`},
		{"bad output format", []string{"status", "-o", "xml"}, `error: unable to match a printer suitable for the output format "xml"`},
		{"a printer convert has not", []string{"convert", "-f", "objects.yaml", "--to", "v1", "-o", "wide"}, `error: unable to match a printer suitable for the output format "wide", allowed formats are: yaml,json`},
		{"unreachable server", []string{"status", "--server", "https://127.0.0.1:1"}, "The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?"},
		{"unknown command", []string{"frobnicate"}, "error: unknown command"},
		{"upgrade without a release", []string{"upgrade"}, "error: -f is required: the release's CRD manifests"},
		{"upgrade of a path that is not there", []string{"upgrade", "-f", "no/such/release"}, `error: the path "no/such/release" does not exist`},
		{"upgrade's server dry run", []string{"upgrade", "-f", "crds.yaml", "--dry-run=server"}, "error: upgrade --dry-run=server is not supported"},
		{"status --release offline", []string{"status", "-f", "crds.yaml", "--release", "crds.yaml"}, "error: --release plans from the cluster toward the release: not with -f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.plugin(tc.args...).mustCode(t, 1)
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
			lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
			// A flag error is followed by kubectl's usage hint on a line of its own.
			if len(lines) == 2 && lines[1] == "See 'kubectl crdversion "+tc.args[0]+" --help' for usage." {
				lines = lines[:1]
			}
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], tc.want) {
				t.Errorf("stderr = %q, want one error line containing %q", r.stderr, tc.want)
			}
			if strings.Contains(r.stderr, "goroutine ") {
				t.Errorf("stack trace on stderr")
			}
		})
	}
	if after := e.crdVersions(); !maps.Equal(before, after) {
		t.Errorf("bad input changed CRDs: %v -> %v", before, after)
	}
}
