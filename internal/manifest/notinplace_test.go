package manifest

import (
	"errors"
	"testing"
)

// What the line editor cannot change is ErrNotInPlace, so that the command
// line, not this package, says what to do about it.
func TestRewriteNotInPlaceIsTold(t *testing.T) {
	in := "base: &b {a: 1}\nkind: Widget\nspec: *b\n"
	f := &File{Path: "x.yaml"}
	if err := f.parse([]byte(in)); err != nil {
		t.Fatal(err)
	}
	objs, _ := f.Objects()
	want := objs[0].Obj
	want["spec"] = map[string]any{"a": int64(2)}
	err := objs[0].Rewrite(want)
	if !errors.Is(err, ErrNotInPlace) {
		t.Fatalf("an alias rewritten: %v, want ErrNotInPlace", err)
	}
	if want := "x.yaml:1: document 1: line 3 uses a YAML anchor or alias: the text cannot be edited in place"; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
}
