// Package e2e runs the built plugin the way users do, `kubectl crdversion
// ...` through kubectl's plugin dispatch, against the in-process API server,
// and checks both the output and the cluster afterwards.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testVersion is injected into the binary under test, so `version` can be
// checked against something the build stamped.
const testVersion = "v0.0.0-e2e"

// binDir holds kubectl-crdversion (and kubectl when the machine has none);
// it goes first on PATH for every command the tests run.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "crdversion-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		binDir = dir
		if err := build(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		return m.Run()
	}())
}

func build(dir string) error {
	root, err := filepath.Abs("../..")
	if err != nil {
		return err
	}
	// The plugin builds in its own module, at the root, exactly as users
	// build it; kubectl builds in this test module.
	goBuild := func(out, pkg string, args ...string) error {
		cmd := exec.Command("go", append(append([]string{"build", "-o", filepath.Join(dir, out)}, args...), pkg)...)
		cmd.Dir = root
		if strings.HasPrefix(pkg, "./test/") {
			cmd.Dir, pkg = filepath.Join(root, "test"), "./"+strings.TrimPrefix(pkg, "./test/")
		}
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
		return nil
	}
	if err := goBuild("kubectl-crdversion", "./cmd/kubectl-crdversion", "-ldflags", "-X main.version="+testVersion); err != nil {
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
	fmt.Fprintln(os.Stderr, "e2e: no kubectl on PATH, building one from k8s.io/kubectl")
	return goBuild("kubectl", "./test/cmd/kubectl")
}
