package report

import (
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// MigrateReport is the document `migrate -o json|yaml` prints.
type MigrateReport struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []*results.Result `json:"items"`
	// Clusters are a fleet run's clusters, in the order they were taken.
	Clusters []ClusterRun `json:"clusters,omitempty"`
}
