// Package releases checks real projects' CRD upgrades, their manifests read
// from the Go modules that carry them at release tags, and compares the
// exit code of `check` with the API server's own answer to the upgrade: a
// server-side dry-run apply of the new CRDs, the real apply, then the
// clients' server-side applies of the live objects.
package releases

import (
	"fmt"
	"os"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
)

// binDir holds the kubectl-crdversion under test.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "crdversion-releases-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		binDir = dir
		if err := plugintest.Build(dir, "v0.0.0-releases"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}())
}
