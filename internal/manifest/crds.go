package manifest

import (
	"context"
	"fmt"
	"io"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Found is what ReadCRDs found: the CRDs, in the order read, and warnings
// about files it skipped.
type Found struct {
	CRDs     []*apiextensionsv1.CustomResourceDefinition
	Warnings []string
	// paths is the file each CRD was read from, by name.
	paths map[string]string
}

// Path is the file the CRD name was read from; "" for stdin, which no
// later command can read again.
func (f *Found) Path(name string) string {
	if p := f.paths[name]; p != stdinPath {
		return p
	}
	return ""
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
	files, warnings, err := readInputs(ctx, paths, recursive, stdin, func(path string, inDir bool, _ []byte, err error) (string, bool) {
		return fmt.Sprintf("%s: %v (skipped)", path, err), inDir
	})
	if err != nil {
		return nil, err
	}
	found.Warnings, found.paths = warnings, seen
	for _, f := range files {
		if err := add(f); err != nil {
			return nil, err
		}
	}
	return found, nil
}
