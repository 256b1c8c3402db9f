package render

import (
	"fmt"
	"io"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// WritePlan renders a lifecycle step for people: what moves where, each
// field it changes, and what it means. How is "applied", "dry run" or
// "server dry run".
func WritePlan(w io.Writer, p *lifecycle.Plan, how string) error {
	if _, err := fmt.Fprintf(w, "%s: %s %s → %s (%s)\n", p.CRD, p.Pair.New, p.From, p.To, how); err != nil {
		return err
	}
	if p.Pair.Old != "" && p.Pair.Old != p.Pair.New {
		if _, err := fmt.Fprintf(w, "pair: %s → %s\n", p.Pair.Old, p.Pair.New); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	t := newTable(w, "VERSION", "FIELD", "BEFORE", "AFTER")
	for _, c := range p.Changes {
		version := c.Version
		if version == "" {
			version = "(all)" // a setting of the CRD, not of one version
		}
		if err := t.Append(version, string(c.Field), c.From, c.To); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, n := range p.Notes {
		if _, err := fmt.Fprintf(w, "\nnote: %s", Advice(n)); err != nil {
			return err
		}
	}
	if markers := kubebuilderMarkers(p); len(markers) > 0 {
		if _, err := io.WriteString(w, "\n\nkubebuilder markers for the same result:"); err != nil {
			return err
		}
		for _, m := range markers {
			if _, err := fmt.Fprintf(w, "\n  %s", m); err != nil {
				return err
			}
		}
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteCRD prints a CRD as a document, as kubectl -o json|yaml would:
// without its managedFields unless showManagedFields.
func WriteCRD(w io.Writer, f Format, crd *apiextensionsv1.CustomResourceDefinition, showManagedFields bool) error {
	out := crd.DeepCopy()
	out.APIVersion, out.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	if !showManagedFields {
		out.ManagedFields = nil
	}
	return writeDocument(w, f, out)
}
