package manifest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Stdin is the -f argument that means standard input, as in kubectl.
const Stdin = "-"

// Found is what ReadCRDs found: the CRDs, in the order read, and warnings
// about files it skipped.
type Found struct {
	CRDs     []*apiextensionsv1.CustomResourceDefinition
	Warnings []string
}

// ReadCRDs reads CRD manifests the way kubectl's -f does: each path a file,
// a directory (its .yaml, .yml and .json files; below it too with
// recursive), or "-" for stdin (so `helm template chart | ... -f -` works).
// Documents other than CRDs are skipped. A file named on its own that does
// not parse is an error naming it and the line; in a directory it is a
// warning and skipped, since a Helm chart keeps unrendered templates beside
// its CRDs. A file that cannot be read, a document that does not decode,
// and a CRD with a field its type lacks are errors wherever they are. Lists
// are unwrapped. A CRD named twice is taken from its last document, with a
// warning.
func ReadCRDs(ctx context.Context, paths []string, recursive bool, stdin io.Reader) (*Found, error) {
	found := &Found{}
	seen := map[string]string{}
	add := func(f *File) error {
		crds, err := f.CRDs()
		if err != nil {
			return err
		}
		for _, c := range crds {
			if where, ok := seen[c.Obj.Name]; ok {
				found.Warnings = append(found.Warnings, fmt.Sprintf("%s: CRD %s also in %s: the later one is used", f.Path, c.Obj.Name, where))
				for i, prev := range found.CRDs {
					if prev.Name == c.Obj.Name {
						found.CRDs = append(found.CRDs[:i], found.CRDs[i+1:]...)
						break
					}
				}
			}
			seen[c.Obj.Name] = f.Path
			found.CRDs = append(found.CRDs, c.Obj)
		}
		return nil
	}
	for _, p := range paths {
		if p == Stdin {
			src, err := readBounded(ctx, "stdin", func() (io.ReadCloser, error) { return io.NopCloser(stdin), nil })
			if err != nil {
				return nil, err
			}
			f := &File{Path: "<stdin>"}
			if err := f.parse(src); err != nil {
				return nil, fmt.Errorf("<stdin>: %w", err)
			}
			if err := add(f); err != nil {
				return nil, err
			}
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			f, err := readFile(ctx, p)
			if err != nil {
				return nil, err
			}
			if err := add(f); err != nil {
				return nil, err
			}
			continue
		}
		err = walkManifests(p, recursive, func(path string) error {
			f, err := readFile(ctx, path)
			var unreadable ioError
			switch {
			case errors.As(err, &unreadable):
				return err
			case err != nil:
				found.Warnings = append(found.Warnings, err.Error()+" (skipped)")
				return nil
			}
			return add(f)
		})
		if err != nil {
			return nil, err
		}
	}
	return found, nil
}
