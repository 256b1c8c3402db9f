package packaging

import (
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// README's two commands are `make demo` and `make test`, on a machine with
// only Go and make: the demo must build the kubectl it runs the plugin
// through when PATH has none.
func TestMakeDemoOnAMachineWithoutKubectl(t *testing.T) {
	repo := copyRepo(t)
	out, err := makeDemo(t, repo, shadowPath(t, ""))
	if err != nil {
		t.Fatalf("make demo with no kubectl on PATH: %v\n%s", err, out)
	}
	for _, want := range []string{"go build -o ../bin/kubectl ./cmd/kubectl", "$ kubectl crdversion migrate --all", "$ kubectl crdversion status no-such-thing"} {
		if !strings.Contains(out, want) {
			t.Errorf("make demo output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "bin", "kubectl")); err != nil {
		t.Errorf("bin/kubectl: %v", err)
	}
}

// A demo step that fails fails the demo: here every kubectl call does.
func TestMakeDemoFailsWhenAStepFails(t *testing.T) {
	repo := copyRepo(t)
	broken := t.TempDir()
	script := "#!/bin/sh\necho \"kubectl: command not found\" >&2\nexit 127\n"
	if err := os.WriteFile(filepath.Join(broken, "kubectl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := makeDemo(t, repo, shadowPath(t, broken))
	if err == nil {
		t.Fatalf("make demo exited 0 with a kubectl that always fails:\n%s", out)
	}
	if !strings.Contains(out, "demo: this step should have ended with exit 0, not 127") {
		t.Errorf("make demo does not say which step failed:\n%s", out)
	}
}

func makeDemo(t *testing.T, repo, path string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "make", "demo")
	cmd.Dir = repo
	env := []string{"PATH=" + path, "DEMO_OBJECTS=20"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "KUBECONFIG=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// shadowPath is a PATH of one directory that links every command of this
// one but kubectl, after the directory first (when given).
func shadowPath(t *testing.T, first string) string {
	t.Helper()
	for _, tool := range []string{"make", "go", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (.ci/run installs it)", tool)
		}
	}
	shadow := t.TempDir()
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			link := filepath.Join(shadow, e.Name())
			if e.Name() == "kubectl" {
				continue
			}
			if _, err := os.Lstat(link); err == nil {
				continue // the first on PATH wins, as the shell's lookup
			}
			if err := os.Symlink(filepath.Join(dir, e.Name()), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	if first != "" {
		return first + string(filepath.ListSeparator) + shadow
	}
	return shadow
}

// copyRepo copies the repository's sources, without what builds and
// releases leave, so a make target runs as on a fresh clone.
func copyRepo(t *testing.T) string {
	t.Helper()
	src, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			switch rel {
			case ".git", "bin", "dist":
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(path, filepath.Join(dst, rel))
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
