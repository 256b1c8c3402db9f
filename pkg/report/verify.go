package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
)

// VerifyReport is the document `verify -o json|yaml` prints.
type VerifyReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	CRD        string `json:"crd"`
	Passed     bool   `json:"passed"`
	migrate.VerifyResult
}

// WriteVerify renders a round-trip check: a line when every object came
// back intact, otherwise every object that did not and how.
func WriteVerify(w io.Writer, f Format, crd string, r *migrate.VerifyResult) error {
	if f == FormatJSON || f == FormatYAML {
		return writeDocument(w, f, VerifyReport{APIVersion: APIVersion, Kind: "VerifyReport", CRD: crd, Passed: r.Passed(), VerifyResult: *r})
	}
	via := strings.Join(r.Versions, ", ")
	if r.Passed() {
		_, err := fmt.Fprintf(w, "%s: all %d objects round-trip through %s (storage %s) without loss\n", crd, r.Objects, via, r.Storage)
		return err
	}
	if _, err := fmt.Fprintf(w, "%s: %d of %d object checks through %s (storage %s) lose data or fail\n\n", crd, len(r.Losses), r.Objects*int64(len(r.Versions)), via, r.Storage); err != nil {
		return err
	}
	t := newTable(w, "OBJECT", "VERSION", "FIELD", "READ", "RETURNED")
	for _, l := range r.Losses {
		obj := l.Name
		if l.Namespace != "" {
			obj = l.Namespace + "/" + l.Name
		}
		if l.Error != "" {
			if err := t.Append(obj, l.Version, "(error)", l.Error, ""); err != nil {
				return err
			}
			continue
		}
		for _, d := range l.Diffs {
			if err := t.Append(obj, l.Version, d.Path, d.Before, d.After); err != nil {
				return err
			}
		}
	}
	return t.Render()
}
