package report

import (
	"fmt"
	"io"
)

// Version is what `version -o json|yaml` prints.
type Version struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	GoVersion  string `json:"goVersion"`
	Platform   string `json:"platform"`
}

// WriteVersion prints the version on one line, or as a document.
func WriteVersion(w io.Writer, f Format, v Version) error {
	if f.Document() {
		v.APIVersion, v.Kind = APIVersion, "Version"
		return writeDocument(w, f, v)
	}
	_, err := fmt.Fprintf(w, "kubectl-crdversion %s %s %s\n", v.Version, v.Platform, v.GoVersion)
	return err
}
