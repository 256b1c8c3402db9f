package report

import (
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// ConvertReport is the document `convert --in-place -o json|yaml` prints.
type ConvertReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	results.ConvertResult
}
