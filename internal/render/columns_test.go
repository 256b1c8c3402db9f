package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -o custom-columns, as kubectl's: a row per item (or finding), a column
// per NAME:PATH, <none> where a path finds nothing; and the file form.
func TestCustomColumns(t *testing.T) {
	doc := map[string]any{"kind": "StatusReport", "items": []any{
		map[string]any{"name": "widgets.example.com", "storageVersion": "v1", "storedVersions": []any{"v1beta1", "v1"}},
		map[string]any{"name": "gadgets.example.com", "storageVersion": "v2"},
	}}
	var b strings.Builder
	if err := writeDocument(&b, Format("custom-columns=NAME:.name,STORAGE:.storageVersion,STORED:.storedVersions[*]"), doc); err != nil {
		t.Fatal(err)
	}
	want := "NAME                  STORAGE   STORED\nwidgets.example.com   v1        v1beta1,v1\ngadgets.example.com   v2        <none>\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	file := filepath.Join(t.TempDir(), "cols")
	if err := os.WriteFile(file, []byte("NAME STORAGE\n.name .storageVersion\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := writeDocument(&b, Format("custom-columns-file="+file), doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "NAME                  STORAGE\nwidgets.example.com   v1\n") {
		t.Errorf("from a file:\n%s", b.String())
	}
	if err := writeDocument(&b, Format("custom-columns=NAME"), doc); err == nil || !strings.Contains(err.Error(), "expected <header>:<json-path-expr>") {
		t.Errorf("a spec without a path: %v", err)
	}
}
