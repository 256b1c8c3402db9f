package releases

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// result is one pair's row of the results table.
type result struct {
	pair   string
	exit   int
	server answer
	before int
	// onlineOnly: a variant of a pair checked offline in its own row.
	onlineOnly      bool
	offlineExit     int
	offlineStrict   int
	offlineFindings int
	offlineBefore   int
}

var (
	resultsMu sync.Mutex
	results   []result
)

// TestReleases runs check on each pair against a cluster that went through
// the pair's path, then asks the API server the same question; the exit
// code must be its answer: 3 exactly when the apply is refused or a
// client's apply of a live object breaks.
func TestReleases(t *testing.T) {
	t.Cleanup(func() { writeTable(t) })
	for _, p := range pairs {
		t.Run(strings.ReplaceAll(p.String(), " ", "_"), func(t *testing.T) {
			r := checkPair(t, p)
			resultsMu.Lock()
			results = append(results, r)
			resultsMu.Unlock()
		})
	}
}

func checkPair(t *testing.T, p pair) result {
	var dirs [][]string
	var sets [][]*apiextensionsv1.CustomResourceDefinition
	for _, r := range p.path {
		paths := crdPaths(t, r)
		found, err := manifest.ReadCRDs(t.Context(), paths, true, nil)
		if err != nil {
			t.Fatalf("%s %s: %v", r.module, r.version, err)
		}
		dirs, sets = append(dirs, paths), append(sets, found.CRDs)
	}
	sb := sandbox.StartT(t, sandbox.Options{})
	c, err := fixtures.NewClients(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	switch p.variant {
	case clientSide:
		return clientSidePair(t, p, sb, c, dirs, sets)
	case promoted:
		return promotedPair(t, p, sb, c, dirs, sets)
	}
	ctx := t.Context()
	for _, crd := range sets[0] {
		if err := applyCRD(ctx, c, crd, false); err != nil {
			t.Fatalf("installing %s: %v", crd.Name, err)
		}
	}
	for _, crd := range sets[0] {
		if err := waitServed(ctx, c, crd); err != nil {
			t.Fatal(err)
		}
	}
	probes, skipped := createProbes(ctx, c, sets[0])
	for _, s := range skipped {
		t.Logf("no probe: %s", s)
	}
	if len(probes) == 0 {
		t.Fatal("no object could be created")
	}
	// The releases in between, applied as their users did.
	last := len(sets) - 1
	for _, set := range sets[1:last] {
		for _, crd := range set {
			if err := applyCRD(ctx, c, crd, false); err != nil {
				t.Fatalf("applying %s: %v", crd.Name, err)
			}
		}
		for _, crd := range set {
			if err := waitServed(ctx, c, crd); err != nil {
				t.Fatal(err)
			}
		}
	}

	r := result{pair: p.String()}
	newArgs := fileArgs("-f", dirs[last])
	online := runCheck(t, append(newArgs, "--kubeconfig", sb.KubeconfigPath())...)
	offline := runCheck(t, append(newArgs, fileArgs("--against-file", dirs[last-1])...)...)
	strict := runCheck(t, append(append(newArgs, fileArgs("--against-file", dirs[last-1])...), "--strict")...)
	r.exit, r.before = online.code, decisiveAt(online.report)
	r.offlineExit, r.offlineStrict = offline.code, strict.code
	r.offlineFindings, r.offlineBefore = len(offline.report.Findings), decisiveAt(offline.report)

	r.server, err = upgrade(ctx, c, sets[last], probes)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("API server: %s", r.server)
	for _, b := range r.server.broken {
		t.Logf("broken: %s", b)
	}
	for _, u := range r.server.unjudged {
		t.Logf("not judged: %s", u)
	}
	if r.exit != r.server.exit() {
		t.Errorf("check exits %d, the API server's answer is %d: %s\ncheck printed:\n%s", r.exit, r.server.exit(), r.server, online.table(t))
	}
	return r
}

func fileArgs(flag string, dirs []string) []string {
	var out []string
	for _, d := range dirs {
		out = append(out, flag, d)
	}
	return out
}

// checkRun is one run of check -o json.
type checkRun struct {
	code   int
	report report.CheckReport
	args   []string
}

func runCheck(t *testing.T, args ...string) checkRun {
	t.Helper()
	full := append([]string{"check", "-R", "-o", "json"}, args...)
	cmd := exec.CommandContext(t.Context(), filepath.Join(binDir, "kubectl-crdversion"), full...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	run := checkRun{args: full}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		run.code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	if run.code == 1 {
		t.Fatalf("check %s failed:\n%s", strings.Join(args, " "), errOut.String())
	}
	if err := json.Unmarshal(out.Bytes(), &run.report); err != nil {
		t.Fatalf("check -o json printed no report: %v\n%s", err, out.String())
	}
	return run
}

// table is the run as a person reads it, for a failure's message.
func (r checkRun) table(t *testing.T) string {
	var b strings.Builder
	for _, f := range r.report.Findings {
		fmt.Fprintf(&b, "%s %s %s %s %s: %.300s\n", f.Severity, f.CRD, f.Version, f.Rule, f.Object, f.Message)
	}
	return b.String()
}

// decisiveAt is how many findings are printed before the first that
// decides the exit code (an error; offline, the storedVersions trap
// too), -1 when none does.
func decisiveAt(r report.CheckReport) int {
	for i, f := range r.Findings {
		if f.Severity == lifecycle.SeverityError || f.Rule == "removedVersionMayBeStored" {
			return i
		}
	}
	return -1
}

// writeTable writes the results as the markdown table of docs/, to the
// file CRDVERSION_RELEASES_TABLE names, and logs it.
func writeTable(t *testing.T) {
	var b strings.Builder
	b.WriteString("| pair | check exit | API server | findings before the first decisive one | offline exit (--strict) | offline findings, trap at |\n|---|---|---|---|---|---|\n")
	for _, r := range results {
		offline := fmt.Sprintf("%d (%d) | %d, %s", r.offlineExit, r.offlineStrict, r.offlineFindings, position(r.offlineBefore))
		if r.onlineOnly {
			offline = "— | —"
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", r.pair, r.exit, strings.ReplaceAll(truncate(r.server.String(), 200), "|", `\|`), position(r.before), offline)
	}
	t.Log("\n" + b.String())
	if path := os.Getenv("CRDVERSION_RELEASES_TABLE"); path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func position(i int) string {
	if i < 0 {
		return "none"
	}
	return fmt.Sprint(i)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
