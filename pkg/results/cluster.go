package results

import "time"

// ClusterMigrationState is where the cluster's own migration of a resource
// (a storagemigration.k8s.io StorageVersionMigration) stands.
type ClusterMigrationState string

const (
	// ClusterMigrationPending: created, and no controller has taken it up
	// (kube-controller-manager not running its storage version migrator,
	// or its garbage collector has not discovered the resource yet).
	ClusterMigrationPending   ClusterMigrationState = "Pending"
	ClusterMigrationRunning   ClusterMigrationState = "Running"
	ClusterMigrationSucceeded ClusterMigrationState = "Succeeded"
	ClusterMigrationFailed    ClusterMigrationState = "Failed"
)

// ClusterMigration is one StorageVersionMigration as its conditions report
// it. The in-tree migrator counts no objects and reports no per-object
// failure: a Failed one says only that some object could not be written.
type ClusterMigration struct {
	Name    string                `json:"name"`
	State   ClusterMigrationState `json:"state"`
	Reason  string                `json:"reason,omitempty"`
	Message string                `json:"message,omitempty"`
	Created time.Time             `json:"created"`
}

// Done reports a migration that will not change any more.
func (m ClusterMigration) Done() bool {
	return m.State == ClusterMigrationSucceeded || m.State == ClusterMigrationFailed
}
