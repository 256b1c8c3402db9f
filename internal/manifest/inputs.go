package manifest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
)

// Stdin is the -f argument that means standard input, as in kubectl.
const Stdin = "-"

// stdinPath is what stdin's documents are said to be in.
const stdinPath = "<stdin>"

// unparsed decides what becomes of a file that does not parse as YAML: a
// warning, and the file skipped, or (ok false) the error it is.
type unparsed func(path string, inDir bool, src []byte, err error) (warning string, ok bool)

// readInputs reads -f paths the way kubectl does: each a file, a directory
// (its .yaml, .yml and .json files; below it too with recursive), or "-"
// for stdin. A file that cannot be read is an error wherever it is; one
// that does not parse is what skip makes of it.
func readInputs(ctx context.Context, paths []string, recursive bool, stdin io.Reader, skip unparsed) ([]*File, []string, error) {
	var files []*File
	var warnings []string
	add := func(root, path string, inDir bool, open func() (io.ReadCloser, error)) error {
		name := path
		if path == stdinPath {
			name = "stdin"
		}
		src, err := readBounded(ctx, name, open)
		if err != nil {
			return err
		}
		f := &File{Path: path, root: root}
		if err := f.parse(src); err != nil {
			w, ok := skip(path, inDir, src, err)
			if !ok {
				return fmt.Errorf("%s: %w", path, err)
			}
			warnings = append(warnings, w)
			return nil
		}
		files = append(files, f)
		return nil
	}
	for _, p := range paths {
		if p == Stdin {
			if err := add("", stdinPath, false, func() (io.ReadCloser, error) { return io.NopCloser(stdin), nil }); err != nil {
				return nil, nil, err
			}
			continue
		}
		info, err := statPath(p)
		if err != nil {
			return nil, nil, err
		}
		if !info.IsDir() {
			if err := add(p, p, false, opener(p)); err != nil {
				return nil, nil, err
			}
			continue
		}
		if err := walkManifests(p, recursive, func(path string) error { return add(p, path, true, opener(path)) }); err != nil {
			return nil, nil, err
		}
	}
	return files, warnings, nil
}

func opener(path string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return os.Open(path) }
}

// IsTemplate says whether a file that did not parse is a template (Helm's
// or any other {{ }} kind) rather than broken YAML: templates live beside
// manifests in charts, and only their rendering is YAML.
func IsTemplate(src []byte) bool { return bytes.Contains(src, []byte("{{")) }
