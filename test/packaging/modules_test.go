package packaging

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

const (
	pluginModule     = "github.com/kubectl-crdversion/kubectl-crdversion"
	controllerModule = pluginModule + "/controller"
)

// An operator outside this tree resolves the controller as a dependent
// does, with no replace: both modules are served at the release the
// controller's go.mod requires from a file module proxy made of this
// checkout's HEAD (everything else from the usual proxy), a fresh module
// go-gets the controller at that version, and the lines docs/controller.md
// gives an operator compile.
func TestControllerModuleResolvesFromAProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds controller-runtime in a fresh module")
	}
	version := requiredPluginVersion(t)
	proxy := t.TempDir()
	for _, m := range []struct{ path, dir string }{{pluginModule, ""}, {controllerModule, "controller"}} {
		serveFromHEAD(t, proxy, module.Version{Path: m.path, Version: version}, m.dir)
	}

	op := t.TempDir()
	mustWrite(t, filepath.Join(op, "go.mod"), "module example.com/operator\n\ngo 1.26.0\n")
	mustWrite(t, filepath.Join(op, "main.go"), operatorFrom(t, docLines(t)))
	upstream := strings.TrimSpace(goEnv(t, "GOPROXY"))
	forgetServed(t)
	// Not in the checksum database: it has never seen these versions.
	// goindex=0: the go command's index of a module in the cache outlives
	// the files forgetServed removes (a cached version never changes, it
	// holds), and would describe the packages of an earlier checkout.
	env := append(os.Environ(), "GODEBUG=goindex=0", "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=file://"+filepath.ToSlash(proxy)+","+upstream, "GONOSUMDB="+pluginModule)
	for _, args := range [][]string{{"get", controllerModule + "@" + version}, {"build", "./..."}} {
		cmd := exec.CommandContext(t.Context(), "go", args...)
		cmd.Dir, cmd.Env = op, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	mod, err := os.ReadFile(filepath.Join(op, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{controllerModule + " " + version, pluginModule + " " + version} {
		if !strings.Contains(string(mod), want) {
			t.Errorf("the operator's go.mod does not require %s:\n%s", want, mod)
		}
	}
}

// requiredPluginVersion is the plugin's version the controller's go.mod
// requires: the release both are tagged with.
func requiredPluginVersion(t *testing.T) string {
	t.Helper()
	path := filepath.Join(root, "controller", "go.mod")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Replace {
		if r.Old.Path == pluginModule {
			t.Fatalf("controller/go.mod replaces %s: a dependent ignores it", pluginModule)
		}
	}
	for _, r := range f.Require {
		if r.Mod.Path == pluginModule {
			return r.Mod.Version
		}
	}
	t.Fatalf("controller/go.mod does not require %s", pluginModule)
	return ""
}

// serveFromHEAD writes m, made of dir at HEAD, into the file proxy.
func serveFromHEAD(t *testing.T, proxy string, m module.Version, dir string) {
	t.Helper()
	at := filepath.Join(proxy, m.Path, "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	z, err := os.Create(filepath.Join(at, m.Version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := zip.CreateFromVCS(z, m, abs, "HEAD", dir); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"Version": m.Version, "Time": time.Now().UTC().Format(time.RFC3339)})
	mustWrite(t, filepath.Join(at, m.Version+".mod"), string(gomod))
	mustWrite(t, filepath.Join(at, m.Version+".info"), string(info))
	mustWrite(t, filepath.Join(at, "list"), m.Version+"\n")
}

// docLines are the Go lines docs/controller.md gives an operator.
func docLines(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "docs", "controller.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## The lines an operator adds.*?```go\n(.*?)```").FindSubmatch(raw)
	if m == nil {
		t.Fatal("docs/controller.md has no ```go block under \"The lines an operator adds\"")
	}
	return string(m[1])
}

// operatorFrom is a program whose setup runs the doc's lines on a manager.
func operatorFrom(t *testing.T, lines string) string {
	t.Helper()
	var imports, body []string
	for line := range strings.Lines(lines) {
		if rest, ok := strings.CutPrefix(line, "import "); ok {
			imports = append(imports, strings.TrimSpace(rest))
			continue
		}
		body = append(body, line)
	}
	if len(imports) == 0 {
		t.Fatalf("the doc's lines import nothing:\n%s", lines)
	}
	return "package main\n\nimport (\n\t" + strings.Join(imports, "\n\t") + "\n\t\"sigs.k8s.io/controller-runtime/pkg/manager\"\n)\n\n" +
		"func setup(mgr manager.Manager) error {\n" + strings.Join(body, "") + "\treturn nil\n}\n\nfunc main() { _ = setup }\n"
}

// forgetServed removes the plugin's modules from the module cache: it keeps
// the first checkout it was served at a version, and would build that one,
// not HEAD. Only this test puts them there (they are never published from
// here); the rest of the cache, and what it saves, stays.
func forgetServed(t *testing.T) {
	t.Helper()
	cache := strings.TrimSpace(goEnv(t, "GOMODCACHE"))
	for _, dir := range []string{filepath.Join(cache, pluginModule), filepath.Join(cache, "cache", "download", pluginModule)} {
		dir = filepath.Dir(dir) // the owner: the plugin's module and every one under its path
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				err = os.Chmod(path, 0o755)
			}
			return err
		})
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A release names its version in four places, which must agree: the
// Makefile's VERSION (the archives), action.yml's default version (the
// action runs its own release), the plugin's version the controller's
// go.mod requires (the two modules are tagged together) and the chart's
// version and appVersion (the image it runs).
func TestReleaseVersionsAgree(t *testing.T) {
	want := makefileVersion(t)
	if got := requiredPluginVersion(t); got != want {
		t.Errorf("controller/go.mod requires the plugin at %s, the Makefile's VERSION is %s", got, want)
	}
	raw, err := os.ReadFile(filepath.Join(root, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^  version:\n(?:    .*\n)*?    default: (\S+)$`).FindSubmatch(raw)
	if m == nil || string(m[1]) != want {
		t.Errorf("action.yml's default version is %q, the Makefile's VERSION is %s", m, want)
	}
	chart, err := os.ReadFile(filepath.Join(root, "deploy", "chart", "crdversion-migrate", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"version: " + strings.TrimPrefix(want, "v"), "appVersion: " + want} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(line) + `$`).Match(chart) {
			t.Errorf("the chart's Chart.yaml lacks %q (the Makefile's VERSION is %s)", line, want)
		}
	}
}
