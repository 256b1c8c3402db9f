package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The release workflow tags the controller's module itself, after the
// plugin's tag exists and the tests passed on it, and before anything is
// published: its step, run by bash as the runner runs it on a checkout of
// a repository whose controller/go.mod requires v0.1.0, pushes
// controller/v0.1.0 at the tagged commit for the tag v0.1.0, and for any
// other tag refuses and pushes nothing.
func TestReleaseTagsTheControllerModule(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, ".github", "workflows", "release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Name string `json:"name"`
				Run  string `json:"run"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatal(err)
	}
	script, at, dist := "", -1, -1
	for i, s := range wf.Jobs["release"].Steps {
		switch {
		case strings.Contains(s.Run, "controller/${GITHUB_REF_NAME}"):
			script, at = s.Run, i
		case strings.Contains(s.Run, "make dist"):
			dist = i
		}
	}
	if script == "" || dist < at {
		t.Fatalf("the release job does not tag controller/vX.Y.Z before it builds what it publishes (step %d, make dist %d)", at, dist)
	}

	gomod, err := os.ReadFile(filepath.Join(root, "controller", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	version := requiredPluginVersion(t)
	for _, c := range []struct {
		tag  string
		code int
	}{{version, 0}, {"v9.9.9", 1}} {
		origin, work := filepath.Join(t.TempDir(), "origin.git"), t.TempDir()
		git := func(dir string, args ...string) string {
			t.Helper()
			out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
			return strings.TrimSpace(string(out))
		}
		git(".", "init", "-q", "--bare", origin)
		git(".", "init", "-q", work)
		if err := os.MkdirAll(filepath.Join(work, "controller"), 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(work, "controller", "go.mod"), string(gomod))
		git(work, "add", ".")
		git(work, "commit", "-qm", "release")
		git(work, "remote", "add", "origin", origin)
		git(work, "push", "-q", "origin", "HEAD:refs/heads/main")
		sha := git(work, "rev-parse", "HEAD")

		run := exec.CommandContext(t.Context(), "bash", "-e", "-c", script)
		run.Dir = work
		run.Env = append(os.Environ(), "GITHUB_REF_NAME="+c.tag, "GITHUB_SHA="+sha, "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := run.CombinedOutput()
		code := run.ProcessState.ExitCode()
		if code != c.code {
			t.Fatalf("the step for %s: exit %d, want %d (%v)\n%s", c.tag, code, c.code, err, out)
		}
		tags := git(origin, "tag", "--list", "--format=%(refname:short) %(objectname)")
		switch want := "controller/" + c.tag + " " + sha; {
		case c.code == 0 && tags != want:
			t.Errorf("origin's tags after %s: %q, want %q", c.tag, tags, want)
		case c.code != 0 && tags != "":
			t.Errorf("a refused step for %s pushed %q", c.tag, tags)
		}
	}
}
