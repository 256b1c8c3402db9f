package releases

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// downloaded caches each module's directory (or why it could not be had)
// for the whole run: several pairs share a release.
var downloaded sync.Map

type moduleResult struct {
	dir string
	err string
}

// moduleDir is where the module cache holds module@version, fetched through
// the Go module proxy. A release the proxy (or this machine's network)
// refuses skips the test: it says nothing about the plugin.
func moduleDir(t *testing.T, module, version string) string {
	t.Helper()
	key := module + "@" + version
	if r, ok := downloaded.Load(key); ok {
		res := r.(moduleResult)
		if res.err != "" {
			t.Skipf("%s not available: %s", key, res.err)
		}
		return res.dir
	}
	cmd := exec.CommandContext(t.Context(), "go", "mod", "download", "-json", key)
	// Outside any module, so the test module's go.mod and go.sum are left
	// as they are; some tags fail the checksum database's check (a tag
	// moved after it was first fetched), and the module is read only.
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GONOSUMDB=*", "GOSUMDB=off")
	out, _ := cmd.Output()
	var info struct{ Dir, Error string }
	res := moduleResult{}
	if err := json.Unmarshal(out, &info); err != nil {
		res.err = "go mod download printed no module: " + string(out)
	} else if info.Dir == "" {
		res.err = info.Error
	} else {
		res.dir = info.Dir
	}
	downloaded.Store(key, res)
	if res.err != "" {
		t.Skipf("%s not available: %s", key, res.err)
	}
	return res.dir
}

// crdPaths are the directories of a release's CRD manifests; those kept
// as Helm templates rendered into a temporary directory first (their
// templated values quoted, the rest comments, as cert-manager keeps them).
func crdPaths(t *testing.T, r release) []string {
	t.Helper()
	root := moduleDir(t, r.module, r.version)
	var out []string
	for _, d := range r.dirs {
		out = append(out, filepath.Join(root, d))
	}
	if r.helm == "" {
		return out
	}
	rendered := t.TempDir()
	for _, d := range out {
		err := filepath.WalkDir(d, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b = templated.ReplaceAll(b, []byte(r.helm))
			return os.WriteFile(filepath.Join(rendered, filepath.Base(path)), b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return []string{rendered}
}

// templated is a quoted Helm template value.
var templated = regexp.MustCompile(`'\{\{[^}]*\}\}'`)
