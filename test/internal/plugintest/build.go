// Package plugintest builds the plugin the way users build it and runs it
// the way they do: `kubectl crdversion ...` through kubectl's plugin
// dispatch.
package plugintest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// root is the repository root: the plugin's module.
func root() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", "..")
}

// Build puts kubectl-crdversion (stamped with version), its completion
// script, and kubectl when the machine has none, in dir.
func Build(dir, version string) error {
	root := root()
	// The plugin builds in its own module, at the root, exactly as users
	// build it; kubectl builds in the test module.
	goBuild := func(out, pkg string, args ...string) error {
		cmd := exec.Command("go", append(append([]string{"build", "-o", filepath.Join(dir, out)}, args...), pkg)...)
		cmd.Dir = root
		// Its own go.mod decides the versions, not the tree's workspace.
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if strings.HasPrefix(pkg, "./test/") {
			cmd.Dir, pkg = filepath.Join(root, "test"), "./"+strings.TrimPrefix(pkg, "./test/")
		}
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
		return nil
	}
	if err := goBuild("kubectl-crdversion", "./cmd/kubectl-crdversion", "-ldflags", "-X main.version="+version); err != nil {
		return err
	}
	completion, err := os.ReadFile(filepath.Join(root, "cmd", "kubectl-crdversion", "kubectl_complete-crdversion"))
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "kubectl_complete-crdversion"), completion, 0o755)
	}
	if err != nil {
		return err
	}
	if _, err := exec.LookPath("kubectl"); err == nil {
		return nil
	}
	fmt.Fprintln(os.Stderr, "plugintest: no kubectl on PATH, building one from k8s.io/kubectl")
	return goBuild("kubectl", "./test/cmd/kubectl")
}

// Result is what a command printed and its exit code.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Kubectl runs kubectl (first on PATH: put Build's dir there) with
// KUBECONFIG and HOME set, stdin as its input.
func Kubectl(ctx context.Context, kubeconfig, home, stdin string, args ...string) (Result, error) {
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HOME="+home)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errOut.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	case err != nil:
		return r, fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return r, nil
}

// MustCode fails the test unless the command exited with code, showing
// what it printed.
func MustCode(t testing.TB, r Result, code int) Result {
	t.Helper()
	if r.Code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, code, r.Stdout, r.Stderr)
	}
	return r
}

// Contains reports each of wants that got lacks.
func Contains(t testing.TB, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}
