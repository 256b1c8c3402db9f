package report

import (
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// CheckReport is the document `check -o json|yaml` prints.
type CheckReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Against is what the new CRDs were compared with: "cluster" or "files".
	Against  string            `json:"against"`
	CRDs     int               `json:"crds"`
	Errors   int               `json:"errors"`
	Warnings int               `json:"warnings"`
	Notes    int               `json:"notes"`
	Findings []results.Finding `json:"findings"`
	// Width, when set (a terminal's), cuts each line of the table to it;
	// -o json|yaml has every word.
	Width int `json:"-"`
}
