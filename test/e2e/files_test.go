package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// offlineLimited is offline with the size a process may write a file to
// capped at kib KiB (ulimit -f), as a full disk or a quota stops a write.
func offlineLimited(t *testing.T, kib int, args ...string) result {
	t.Helper()
	return offlineRun(t, "", "bash", append([]string{"-c", fmt.Sprintf(`ulimit -f %d && exec kubectl crdversion "$@"`, kib), "bash"}, args...)...)
}

// widgets is n Widgets at v1beta1 in one file, a line of comment each.
func widgets(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\n# widget %d of the shop\napiVersion: conv.example.com/v1beta1\nkind: Widget\nmetadata:\n  name: w%d\n  namespace: default\nspec:\n  size: %d\n", i, i, i)
	}
	return b.String()
}

// withCRDFile writes the widgets CRD outside any tree a test converts.
func withCRDFile(t *testing.T) string {
	t.Helper()
	return filepath.Join(writeTree(t, map[string]string{"crd.yaml": widgetsCRD}), "crd.yaml")
}

// noTempFiles fails on anything in dir a write left behind.
func noTempFiles(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	got := readTree(t, dir)
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("left behind in the tree: %s", name)
		}
	}
}

// A write the file system stops half-way (here a file-size limit) leaves
// every file of the run as it was, byte for byte; without the limit the
// same run writes them all, each keeping its mode.
func TestConvertInPlaceWritesEveryFileWholeOrNone(t *testing.T) {
	crd := withCRDFile(t)
	files := map[string]string{"a-small.yaml": widgets(1), "big.yaml": widgets(400)}
	if len(files["big.yaml"]) < 32*1024 {
		t.Fatalf("setup: big.yaml is %d bytes, want more than the limit", len(files["big.yaml"]))
	}
	dir := writeTree(t, files)
	if err := os.Chmod(filepath.Join(dir, "big.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}

	r := offlineLimited(t, 16, "convert", "-f", dir, "--to", "v1", "--crd-file", crd, "--in-place").mustCode(t, 1)
	oneError(t, r, "big.yaml", "nothing was written")
	if got := readTree(t, dir); got["a-small.yaml"] != files["a-small.yaml"] || got["big.yaml"] != files["big.yaml"] {
		t.Fatal("a file changed though the write failed")
	}
	noTempFiles(t, dir, files)

	r = offline(t, "convert", "-f", dir, "--to", "v1", "--crd-file", crd, "--in-place").mustCode(t, 0)
	contains(t, "convert", r.stdout, "401 converted to v1")
	got := readTree(t, dir)
	for name, before := range files {
		if want := strings.ReplaceAll(before, "conv.example.com/v1beta1", "conv.example.com/v1"); got[name] != want {
			t.Errorf("%s is not the file with only apiVersion changed", name)
		}
	}
	noTempFiles(t, dir, files)
	if info, err := os.Stat(filepath.Join(dir, "big.yaml")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("big.yaml's mode was not kept: %v %v", info, err)
	}
}

// promote -f under the same limit: the manifest is whole, as it was.
func TestOfflinePromoteWritesTheFileWholeOrNotAtAll(t *testing.T) {
	original, err := os.ReadFile("../../hack/demo/clusterpolicies-v2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Long enough that the limit falls inside it.
	content := strings.Repeat("# the policy CRD of the platform team, kept as generated\n", 600) + string(original)
	dir := t.TempDir()
	file := filepath.Join(dir, "crds.yaml")
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	oneError(t, offlineLimited(t, 16, "promote", "-f", file, "v2").mustCode(t, 1), file, "nothing was written")
	if now, _ := os.ReadFile(file); string(now) != content {
		t.Fatalf("the manifest changed though the write failed: %d bytes of %d", len(now), len(content))
	}
	noTempFiles(t, dir, map[string]string{"crds.yaml": ""})
	offline(t, "promote", "-f", file, "v2").mustCode(t, 0)
	offline(t, "rollback", "-f", file).mustCode(t, 0)
	if now, _ := os.ReadFile(file); string(now) != content {
		t.Fatal("promote -f then rollback -f did not give the file back")
	}
}

// A symlink in the tree that leads out of it is refused by its name and
// never written through; nothing else is written either.
func TestConvertInPlaceRefusesASymlinkOutOfTheTree(t *testing.T) {
	crd := withCRDFile(t)
	outside := writeTree(t, map[string]string{"theirs.yaml": widgets(1)})
	files := map[string]string{"ours.yaml": widgets(2)}
	dir := writeTree(t, files)
	link := filepath.Join(dir, "linked.yaml")
	if err := os.Symlink(filepath.Join(outside, "theirs.yaml"), link); err != nil {
		t.Fatal(err)
	}

	r := offline(t, "convert", "-f", dir, "-R", "--to", "v1", "--crd-file", crd, "--in-place").mustCode(t, 1)
	oneError(t, r, link, "outside "+dir, "not written through", "nothing was written")
	if got := readTree(t, outside)["theirs.yaml"]; got != widgets(1) {
		t.Fatalf("written through the link:\n%s", got)
	}
	if got := readTree(t, dir)["ours.yaml"]; got != files["ours.yaml"] {
		t.Fatal("a file of the tree was written before the refusal")
	}
}

// A file that starts with a UTF-8 byte-order mark (kubectl applies it) is
// converted, the mark kept; and --accept-loss, which the refusal advises,
// converts an object whose mapping it empties, block or flow style, into
// what the API server keeps ({}).
func TestConvertABOMFileAndMappingsLeftEmpty(t *testing.T) {
	crd := withCRDFile(t)
	files := map[string]string{
		"bom.yaml": "\ufeffapiVersion: conv.example.com/v1beta1\nkind: Widget\nmetadata:\n  name: marked\nspec:\n  size: 2\n",
		"legacy.yaml": "apiVersion: conv.example.com/v1beta1\nkind: Widget\nmetadata:\n  name: block\nspec:\n  # from the old days\n  legacy: x\n---\n" +
			"apiVersion: conv.example.com/v1beta1\nkind: Widget\nmetadata:\n  name: flow\nspec: {legacy: x}\n",
	}
	dir := writeTree(t, files)

	r := offline(t, "convert", "-f", dir, "--to", "v1", "--crd-file", crd, "--in-place").mustCode(t, 3)
	contains(t, "refused", r.stdout, "1 converted to v1", "2 refused", "--accept-loss")
	if got := readTree(t, dir)["legacy.yaml"]; got != files["legacy.yaml"] {
		t.Fatalf("refused objects were written:\n%s", got)
	}
	if got, want := readTree(t, dir)["bom.yaml"], strings.Replace(files["bom.yaml"], "v1beta1", "v1", 1); got != want {
		t.Fatalf("bom.yaml:\n%q\nwant\n%q", got, want)
	}

	r = offline(t, "convert", "-f", dir, "--to", "v1", "--crd-file", crd, "--in-place", "--accept-loss").mustCode(t, 0)
	contains(t, "accepted", r.stdout, "2 converted to v1", "1 already at v1")
	want := "apiVersion: conv.example.com/v1\nkind: Widget\nmetadata:\n  name: block\nspec: {}\n---\n" +
		"apiVersion: conv.example.com/v1\nkind: Widget\nmetadata:\n  name: flow\nspec: {}\n"
	if got := readTree(t, dir)["legacy.yaml"]; got != want {
		t.Fatalf("legacy.yaml:\n%s\nwant:\n%s", got, want)
	}
}

// promote -f and rollback -f on a manifest with a byte-order mark: the
// file back byte for byte, the mark included.
func TestOfflinePromoteABOMFile(t *testing.T) {
	original, err := os.ReadFile("../../hack/demo/clusterpolicies-v2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// apiVersion on line 1, right after the mark.
	content := "\ufeff" + string(original[strings.Index(string(original), "apiVersion:"):])
	file := filepath.Join(t.TempDir(), "crds.yaml")
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	offline(t, "promote", "-f", file, "v2").mustCode(t, 0)
	promoted, _ := os.ReadFile(file)
	if !strings.HasPrefix(string(promoted), "\ufeff") || !strings.Contains(string(promoted), "deprecated: true") {
		t.Fatalf("promote -f:\n%s", promoted)
	}
	offline(t, "rollback", "-f", file).mustCode(t, 0)
	if back, _ := os.ReadFile(file); string(back) != content {
		t.Fatalf("rollback -f did not give the file back:\n%q", back)
	}
}
