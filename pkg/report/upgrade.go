package report

import (
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// UpgradeReport is the document `upgrade -o json|yaml` prints: the way from the cluster to a
// release, every CRD's steps in order, and what the walk did of it.
type UpgradeReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Done: every CRD of the release is applied and stored at its storage version only, and no
	// CRD the release lacks holds objects its owner would delete.
	Done bool                `json:"done"`
	CRDs []lifecycle.Upgrade `json:"crds"`
	// Taken are the steps the walk took, as command lines, in order.
	Taken []string `json:"taken,omitempty"`
	// Dropped are the live CRDs the release lacks that its owner's apply may delete, with their
	// objects (check's crdDropped findings): not in the plan, said before it.
	Dropped []results.Finding `json:"dropped,omitempty"`
}
