package report

import (
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// StatusItem is one CRD in a status report.
type StatusItem struct {
	// Cluster is the kubeconfig context the CRD is on, in a fleet view.
	Cluster string `json:"cluster,omitempty"`
	lifecycle.Assessment
	// Objects counts the CRD's objects; set only by -o wide (and in the
	// documents), nil when not counted or not countable (no served version).
	Objects *int64 `json:"objects,omitempty"`
	// ClusterMigration is the newest StorageVersionMigration of the CRD's
	// resource, when the cluster serves them and has one.
	ClusterMigration *results.ClusterMigration `json:"clusterMigration,omitempty"`
	// Release: Next is the first step toward the release status --release was given.
	Release bool `json:"release,omitempty"`
}

// StatusReport is the document `status -o json|yaml` prints.
type StatusReport struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Items      []StatusItem `json:"items"`
}
