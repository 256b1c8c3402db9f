package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// serverModules are what the tests need and the plugin must never pull into
// an importer's module graph or its binary: an API server, an etcd server,
// kubectl, Kubernetes itself, or this repository's test module.
var serverModules = []string{
	"go.etcd.io/etcd/server/",
	"k8s.io/kubectl",
	"k8s.io/kubernetes",
	"k8s.io/kube-aggregator",
	"github.com/kubectl-crdversion/kubectl-crdversion/test",
}

// serverPackages are the server side of the libraries the plugin does
// import: apiextensions-apiserver for the CRD types and its validators,
// k8s.io/apiserver for the CEL environment those validators run in.
var serverPackages = []string{
	"k8s.io/apiserver/pkg/server",
	"k8s.io/apiserver/pkg/storage",
	"k8s.io/apiserver/pkg/registry",
	"k8s.io/apiserver/pkg/endpoints",
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion",
	"k8s.io/apiextensions-apiserver/pkg/registry",
	"k8s.io/apiextensions-apiserver/pkg/cmd",
}

func TestPluginModuleRequiresNoServer(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range serverModules {
		if strings.Contains(string(mod), bad) {
			t.Errorf("the plugin's go.mod requires %s", bad)
		}
	}
}

func TestPluginLinksNoServer(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./cmd/kubectl-crdversion", "./pkg/...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps printed %d packages: not a dependency list", len(deps))
	}
	for _, dep := range deps {
		for _, bad := range append(append([]string{}, serverModules...), serverPackages...) {
			if strings.HasPrefix(dep, bad) {
				t.Errorf("the plugin links %s", dep)
			}
		}
	}
}

// k8s.io/kubernetes pins its 33 staging modules with replace directives of
// its own; only test/full, the full control plane's module, may take them
// on. The test module reaches it through its binary.
func TestOnlyTheFullSandboxRequiresKubernetes(t *testing.T) {
	for _, dir := range []string{".", "test"} {
		mod, err := os.ReadFile(filepath.Join(root, dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(mod), "k8s.io/kubernetes ") {
			t.Errorf("%s/go.mod requires k8s.io/kubernetes", dir)
		}
	}
}

// controller-runtime is for the controller's modules (controller/ and its
// tests, test/controller) only: an operator that imports pkg/migrate
// without it must not get it, and the test module tests the plugin, not
// the controller.
func TestOnlyTheControllerModulesRequireControllerRuntime(t *testing.T) {
	for _, dir := range []string{".", "test", "test/full"} {
		mod, err := os.ReadFile(filepath.Join(root, dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(mod), "sigs.k8s.io/controller-runtime") {
			t.Errorf("%s/go.mod requires sigs.k8s.io/controller-runtime", dir)
		}
	}
}

// The controller's modules build every module they share with the plugin's
// (and its tests with the test module's) at the same version: the
// controller drives exactly the engine the plugin ships, and a build of
// every module, as make test's, compiles client-go and the rest once.
func TestControllerModulesBuildTheSameVersions(t *testing.T) {
	for _, pair := range [][2]string{{".", "controller"}, {"test", "test/controller"}} {
		base, ctrl := builtModules(t, pair[0]), builtModules(t, pair[1])
		for mod, v := range ctrl {
			if b, ok := base[mod]; ok && b != v {
				t.Errorf("%s builds %s %s, %s builds %s", pair[1], mod, v, pair[0], b)
			}
		}
	}
}

// builtModules are the modules, with their versions, of every package a
// module's tests build.
func builtModules(t *testing.T, dir string) map[string]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}", "./...")
	cmd.Dir = filepath.Join(root, dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list in %s: %v", dir, err)
	}
	mods := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if path, version, ok := strings.Cut(line, " "); ok && version != "" {
			mods[path] = version
		}
	}
	if len(mods) < 10 {
		t.Fatalf("go list in %s named %d modules: not a dependency list", dir, len(mods))
	}
	return mods
}
