package report

import (
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// VerifyReport is the document `verify -o json|yaml` prints.
type VerifyReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	CRD        string `json:"crd"`
	Passed     bool   `json:"passed"`
	results.VerifyResult
}
