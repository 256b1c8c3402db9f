package releases

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The pull-request gate (action.yml) run as the runner runs a composite
// action's step, on a repository with two commits of Kyverno's CRDs: 1.12.0,
// then 1.13.0, which removes a version. Checked against the first commit it
// fails (exit 3) and writes check's report to the job summary; a pull
// request that leaves the CRDs as they are passes.
func TestActionGatesAPullRequest(t *testing.T) {
	old, next := kyverno("v1.12.0"), kyverno("v1.13.0")
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	commitCRDs := func(r release) string {
		t.Helper()
		dst := filepath.Join(repo, "config", "crds")
		if err := os.RemoveAll(dst); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(dst, os.DirFS(filepath.Join(moduleDir(t, r.module, r.version), r.dirs[0]))); err != nil {
			t.Fatal(err)
		}
		git("add", "-A")
		git("commit", "-q", "-m", "CRDs of "+r.version)
		return git("rev-parse", "HEAD")
	}
	base := commitCRDs(old)
	head := commitCRDs(next)

	// A directory given with its slash is the same directory.
	summary, out, code := runAction(t, repo, map[string]string{"manifests": "config/crds/", "base": base, "version": ""})
	if code != 3 {
		t.Fatalf("the gate on a version removed: exit %d, want 3\n%s", code, out)
	}
	if !strings.Contains(summary, "## ") || !strings.Contains(summary, "kyverno.io") {
		t.Errorf("no markdown report of Kyverno's CRDs in the job summary:\n%s", summary)
	}
	if _, out, code = runAction(t, repo, map[string]string{"manifests": "config/crds", "base": head, "version": ""}); code != 0 {
		t.Errorf("the gate on unchanged CRDs: exit %d, want 0\n%s", code, out)
	}
}

// runAction runs action.yml's one step as the runner does: its env with the
// inputs (and their defaults) in place of ${{ inputs.NAME }}, its run in
// bash -eo pipefail from the checkout, GITHUB_STEP_SUMMARY and
// GITHUB_OUTPUT files, and env (KEY=VALUE) as the runner's own variables.
// It returns the summary written, the step's output and its exit code.
func runAction(t *testing.T, checkout string, inputs map[string]string, env ...string) (string, string, int) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Inputs map[string]struct {
			Default string `json:"default"`
		} `json:"inputs"`
		Runs struct {
			Using string `json:"using"`
			Steps []struct {
				Shell string            `json:"shell"`
				Env   map[string]string `json:"env"`
				Run   string            `json:"run"`
			} `json:"steps"`
		} `json:"runs"`
	}
	if err := yaml.Unmarshal(raw, &action); err != nil {
		t.Fatal(err)
	}
	if action.Runs.Using != "composite" || len(action.Runs.Steps) != 1 || action.Runs.Steps[0].Shell != "bash" {
		t.Fatalf("action.yml is not one bash step of a composite action: %+v", action.Runs)
	}
	expr := regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)
	eval := func(s string) string {
		return expr.ReplaceAllStringFunc(s, func(m string) string {
			name := strings.TrimSpace(expr.FindStringSubmatch(m)[1])
			switch {
			case name == "github.action_path":
				return root
			case strings.HasPrefix(name, "inputs."):
				in := strings.TrimPrefix(name, "inputs.")
				if v, ok := inputs[in]; ok {
					return v
				}
				return action.Inputs[in].Default
			}
			t.Fatalf("action.yml uses %s, which this test does not provide", m)
			return ""
		})
	}
	step := action.Runs.Steps[0]
	dir := t.TempDir()
	script := filepath.Join(dir, "step.sh")
	if err := os.WriteFile(script, []byte(eval(step.Run)), 0o600); err != nil {
		t.Fatal(err)
	}
	summary, output := filepath.Join(dir, "summary.md"), filepath.Join(dir, "output")
	cmd := exec.CommandContext(t.Context(), "bash", "--noprofile", "--norc", "-eo", "pipefail", script)
	cmd.Dir = checkout
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "GITHUB_STEP_SUMMARY="+summary, "GITHUB_OUTPUT="+output)
	cmd.Env = append(cmd.Env, env...)
	for k, v := range step.Env {
		cmd.Env = append(cmd.Env, k+"="+eval(v))
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(summary)
	if o, _ := os.ReadFile(output); !strings.Contains(string(o), fmt.Sprintf("exit-code=%d\n", code)) {
		t.Errorf("GITHUB_OUTPUT says %q, want exit-code=%d\n%s", o, code, out)
	}
	return string(got), string(out), code
}
