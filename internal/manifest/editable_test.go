package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Files promote -f cannot edit line by line are refused, naming why, before
// anything is written.
func TestEditableRefusesWhatItCannotEditInPlace(t *testing.T) {
	block := original[strings.Index(original, "  versions:\n"):strings.Index(original, "---\napiVersion: v1\nkind: Service")]
	flowVersions := strings.Replace(original, block, "  versions: [{name: v1beta1, served: true, storage: true}, {name: v1, served: true, storage: false}]\n", 1)
	for _, tc := range []struct {
		name, file, content, want string
	}{
		{"block-style YAML", "crd.yaml", original, ""},
		{"JSON", "crd.json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},"spec":{"versions":[]}}`, "is JSON"},
		{"CRLF line endings", "crd.yaml", strings.ReplaceAll(original, "\n", "\r\n"), "has CRLF line endings"},
		{"flow-style versions", "crd.yaml", flowVersions, "spec.versions is written in flow style"},
		{"flow-style annotations", "crd.yaml", strings.Replace(original, "  name: widgets.example.com\n", "  name: widgets.example.com\n  annotations: {a: b}\n", 1), "metadata.annotations is written in flow style"},
	} {
		path := filepath.Join(t.TempDir(), tc.file)
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		crds, err := ReadEditable(t.Context(), path)
		if err != nil || len(crds) != 1 {
			t.Fatalf("%s: %v %d CRDs", tc.name, err, len(crds))
		}
		err = crds[0].Editable()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		// What to do about it is the command line's to say, not the library's.
		if err != nil && strings.Contains(err.Error(), "by hand") {
			t.Errorf("%s: %v gives advice; only cmd does", tc.name, err)
		}
	}
}
