package manifest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
	kjson "sigs.k8s.io/json"
)

// Object is one object of a manifest file: a document, or an item of a
// List document.
type Object struct {
	File  *File
	Index int // which document of the file
	// Item is its index in the document's List, or -1.
	Item int
	Obj  map[string]any
}

// Where names the object's place for people: file:line: document N[, item M].
func (o Object) Where() string {
	doc := o.File.docs[o.Index]
	line := doc.Line
	if n := o.node(); n != nil {
		line = n.Line
	}
	w := fmt.Sprintf("%s:%d: document %d", o.File.Path, o.File.lineBase+line, o.File.docBase+o.Index+1)
	if o.Item >= 0 {
		w += fmt.Sprintf(", item %d", o.Item+1)
	}
	return w
}

// Objects lists every object of the file, Lists unwrapped; a document that
// does not decode is an error naming the file, the document and the line.
func (f *File) Objects() ([]Object, error) {
	var out []Object
	for i, doc := range f.docs {
		// A list is no object: a JSON 6902 patch of a kustomize tree.
		if n := root(doc); n != nil && n.Kind == yaml.SequenceNode {
			continue
		}
		objs, err := objectsOf(doc)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: document %d: %w", f.Path, doc.Line, i+1, err)
		}
		for _, d := range objs {
			obj, err := jsonObject(d.obj)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: document %d: %w", f.Path, doc.Line, i+1, err)
			}
			out = append(out, Object{File: f, Index: i, Item: d.item, Obj: obj})
		}
	}
	return out, nil
}

// Files is what ReadFiles read: the files that parse, in order, and a
// warning for each template skipped.
type Files struct {
	Files    []*File
	Warnings []string
}

// ReadFiles reads every document of -f paths (files, directories, "-"),
// to be changed and written back or printed. A file that does not parse
// is an error, wherever it is, unless it is a template ({{ }}): a Helm
// chart's templates are skipped with a warning naming the file.
func ReadFiles(ctx context.Context, paths []string, recursive bool, stdin io.Reader) (*Files, error) {
	skipped := func(path string, _ error) string {
		return fmt.Sprintf("%s is a template ({{ }}), not YAML: skipped; convert what it renders to instead", path)
	}
	files, warnings, err := readInputs(ctx, paths, recursive, stdin, func(path string, _ bool, src []byte, err error) (string, bool) {
		return skipped(path, err), IsTemplate(src)
	})
	if err != nil {
		return nil, err
	}
	out := &Files{Warnings: warnings}
	for _, f := range files {
		// A template may parse as YAML yet not decode ({{ x }} reads as
		// a map key).
		if _, err := f.Objects(); err != nil {
			if !IsTemplate(f.src) {
				return nil, err
			}
			out.Warnings = append(out.Warnings, skipped(f.Path, err))
			continue
		}
		out.Files = append(out.Files, f)
	}
	return out, nil
}

// jsonObject is obj as the API server decodes it (integers as int64,
// exactly, other numbers as float64), the form the Kubernetes libraries
// take objects in.
func jsonObject(obj map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, kjson.UnmarshalCaseSensitivePreserveInts(raw, &out)
}
