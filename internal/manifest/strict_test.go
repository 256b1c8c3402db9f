package manifest

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// zeros reads as /dev/zero does: forever.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

const crdDoc = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
`

// An input that does not decode is an error naming where, never a CRD
// fewer: "nothing found" must mean nothing is there.
func TestReadCRDsRefusesWhatDoesNotDecode(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"a duplicate key", strings.Replace(crdDoc, "  scope: Namespaced\n", "  scope: Namespaced\n  scope: Cluster\n", 1), `<stdin>:1: document 1: yaml: unmarshal errors:`},
		{"a field the type lacks", strings.Replace(crdDoc, "    storage: true\n", "    storage: true\n    deprecatd: true\n", 1), `<stdin>:1: document 1: line 13: unknown field "spec.versions[0].deprecatd"`},
		{"an alias bomb", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n", "excessive aliasing"},
		{"a CRD of another API version", strings.Replace(crdDoc, "apiextensions.k8s.io/v1\n", "apiextensions.k8s.io/v1beta1\n", 1), "only apiextensions.k8s.io/v1 is supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found, err := ReadCRDs(t.Context(), []string{Stdin}, false, strings.NewReader(tc.content))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v (found %+v), want %q", err, found, tc.want)
			}
		})
	}
}

func TestReadCRDsUnwrapsLists(t *testing.T) {
	item := func(name string) string {
		lines := strings.Split(strings.TrimRight(strings.Replace(crdDoc, "widgets.example.com", name, 1), "\n"), "\n")
		return "- " + strings.Join(lines, "\n  ") + "\n"
	}
	list := "apiVersion: v1\nkind: List\nitems:\n" + item("widgets.example.com") + item("gadgets.example.com")
	found, err := ReadCRDs(t.Context(), []string{Stdin}, false, strings.NewReader(list))
	if err != nil || len(found.CRDs) != 2 || found.CRDs[1].Name != "gadgets.example.com" {
		t.Fatalf("found %+v, %v: want both CRDs of the List", found, err)
	}
	path := filepath.Join(t.TempDir(), "list.yaml")
	if err := os.WriteFile(path, []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	crds, err := ReadEditable(t.Context(), path)
	if err != nil || len(crds) != 2 {
		t.Fatalf("%v, %d CRDs", err, len(crds))
	}
	if err := crds[0].Editable(); err == nil || !strings.Contains(err.Error(), "in a List") {
		t.Errorf("editing a CRD inside a List: %v, want refused", err)
	}
}

func TestReadCRDsBoundsWhatItReads(t *testing.T) {
	_, err := ReadCRDs(t.Context(), []string{Stdin}, false, io.Reader(zeros{}))
	if err == nil || !strings.Contains(err.Error(), "holds more than 64 MiB") {
		t.Fatalf("err = %v, want the input refused past the bound", err)
	}
}

// A file in a directory that cannot be read is an error, not a warning:
// a CRD in it would silently be missing. One that does not parse (a Helm
// template) is a warning.
func TestReadCRDsInADirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "crd.yaml"), []byte(crdDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "template.yaml"), []byte("{{- if .Values.x }}\nkind: {{ .Values.kind\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	found, err := ReadCRDs(t.Context(), []string{dir}, false, nil)
	if err != nil || len(found.CRDs) != 1 || len(found.Warnings) != 1 || !strings.Contains(found.Warnings[0], "template.yaml") {
		t.Fatalf("found %+v, %v: want the CRD and a warning naming the template", found, err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "gone.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCRDs(t.Context(), []string{dir}, false, nil); err == nil || !strings.Contains(err.Error(), "gone.yaml") {
		t.Fatalf("err = %v, want the unreadable file named", err)
	}
}

// A read that never ends (a stdin no one closes, a FIFO no one writes)
// ends with the command's context, as Ctrl-C ends everything else.
func TestReadCRDsEndsWithItsContext(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "crds.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	never, w := io.Pipe()
	defer w.Close()
	for _, tc := range []struct {
		name  string
		paths []string
	}{{"stdin", []string{Stdin}}, {"a FIFO", []string{fifo}}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, err := ReadCRDs(ctx, tc.paths, false, never)
				done <- err
			}()
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want the read ended by its context", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the read did not end with its context")
			}
		})
	}
}
