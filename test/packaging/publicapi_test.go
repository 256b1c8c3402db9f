package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// publicPackages are what an importer may use: the rest is internal/.
var publicPackages = []string{"migrate", "lifecycle", "report", "results"}

// An importer can name every type the public packages' signatures use: no
// exported function, method, field or type of pkg/ mentions a type of
// internal/ (the one form allowed is an error value re-exported by name, a
// value an importer compares with errors.Is). Each public package has a
// runnable example.
func TestPublicAPINamesNoInternalType(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(root, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, regexp.QuoteMeta(e.Name()))
		}
	}
	mentions := regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\.[A-Z]`)
	reexportedError := regexp.MustCompile(`^\s*Err\w+\s*=\s*\w+\.Err\w+$`)
	total := 0
	for _, p := range publicPackages {
		doc := goDoc(t, "-all", "./pkg/"+p)
		for _, line := range strings.Split(doc, "\n") {
			code := strings.TrimSpace(line)
			if strings.HasPrefix(line, "    ") || strings.HasPrefix(code, "//") || reexportedError.MatchString(line) {
				continue // doc text, a field's comment, or an error value
			}
			if mentions.MatchString(code) {
				t.Errorf("pkg/%s: %q names a type of internal/", p, code)
			}
		}
		short := strings.Count(strings.TrimSpace(goDoc(t, "-short", "./pkg/"+p)), "\n") + 1
		total += short
		t.Logf("go doc -short ./pkg/%s: %d lines", p, short)

		example, err := os.ReadFile(filepath.Join(root, "pkg", p, "example_test.go"))
		if err != nil || !regexp.MustCompile(`(?m)^func Example\w*\(\) \{`).Match(example) {
			t.Errorf("pkg/%s has no runnable example in example_test.go", p)
		}
	}
	t.Logf("go doc -short of the public packages: %d lines", total)
}

func goDoc(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"doc"}, args...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go doc %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// The controller is the plugin's first importer: it builds on the public
// packages alone, so what it needs is what any operator can reach.
func TestControllerImportsNoInternalPackage(t *testing.T) {
	dir := filepath.Join(root, "controller")
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(src), `"github.com/kubectl-crdversion/kubectl-crdversion/internal/`) {
			t.Errorf("%s imports an internal package of the plugin: what it needs belongs in pkg/", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
