package render

import (
	"fmt"
	"io"
)

// WriteVersion prints the version on one line, or as a document.
func WriteVersion(w io.Writer, f Format, v Version) error {
	if f.Document() {
		v.APIVersion, v.Kind = APIVersion, "Version"
		return writeDocument(w, f, v)
	}
	_, err := fmt.Fprintf(w, "kubectl-crdversion %s %s %s\n", v.Version, v.Platform, v.GoVersion)
	return err
}
