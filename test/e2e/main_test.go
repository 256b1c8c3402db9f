// Package e2e runs the built plugin the way users do, `kubectl crdversion
// ...` through kubectl's plugin dispatch, against the in-process API server,
// and checks both the output and the cluster afterwards.
package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
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
		if err := plugintest.Build(dir, testVersion); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		return m.Run()
	}())
}
