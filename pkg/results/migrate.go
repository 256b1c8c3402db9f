package results

import "time"

// Result is what a migration of one CRD did.
type Result struct {
	// Cluster is the kubeconfig context the CRD is on, in a fleet run.
	Cluster        string   `json:"cluster,omitempty"`
	CRD            string   `json:"crd"`
	Storage        string   `json:"storage"`
	StoredVersions []string `json:"storedVersions"`
	// Proofs say, per old version in storedVersions, how re-storing its
	// objects is known to lose nothing.
	Proofs []Proof `json:"proofs"`
	RestoreResult
	// Settle is the second pass made after the switch grace ran out, when
	// the first began inside it: writes in flight across the switch may
	// have landed at the old version meanwhile.
	Settle *RestoreResult `json:"settle,omitempty"`
	// Pruned is true when storedVersions was written down to [storage].
	Pruned bool `json:"pruned"`
	// PruneSkipped says why storedVersions was left as it is; PruneReason
	// says it, or that it was pruned, in a word a program can branch on.
	PruneSkipped        string        `json:"pruneSkipped,omitempty"`
	PruneReason         PruneReason   `json:"pruneReason,omitempty"`
	StoredVersionsAfter []string      `json:"storedVersionsAfter"`
	Duration            time.Duration `json:"duration"`
	// ManagedFields is the cleaning pass, when one ran.
	ManagedFields *RestoreResult `json:"managedFields,omitempty"`
	// ClusterMigration is the cluster's own migration that re-stored the
	// objects (migrate --via=cluster) instead of this plugin's pass: the
	// counts of objects are then unknown, and zero.
	ClusterMigration *ClusterMigration `json:"clusterMigration,omitempty"`
	// APIServers are the API servers the passes wrote through.
	APIServers *APIServers `json:"apiServers,omitempty"`
	// DefaultsPersisted are the fields the storage version's schema
	// defaults where an old version's does not: a re-store writes them into
	// each object stored at that version which lacks them, and moves its
	// generation.
	DefaultsPersisted []string `json:"defaultsPersisted,omitempty"`
	// DefaultsWritten are, after the passes, the fields a re-store filled
	// with the storage version's default and how many objects each: a
	// generation moved by these alone is no change to look at (Changed
	// counts only the others).
	DefaultsWritten []DefaultWritten `json:"defaultsWritten,omitempty"`
	// ServedAgain are the old versions, not served, that the migration
	// served again while it checked their objects.
	ServedAgain *ServedAgain `json:"servedAgain,omitempty"`
}

// DefaultWritten is a field the storage version's schema defaults, filled
// in by the re-store's write where an object lacked it.
type DefaultWritten struct {
	// Field is its path, list elements as [*].
	Field string `json:"field"`
	// Default is the value written, as JSON.
	Default string `json:"default"`
	Objects int64  `json:"objects"`
}

// ServedAgain is an unserved old version served again, deprecated, for the
// check of its objects: what only its schema holds no other version shows.
type ServedAgain struct {
	Versions []string `json:"versions"`
	// Undone: no longer served after the pass, as before it; else
	// UndoError says what is left.
	Undone    bool   `json:"undone"`
	UndoError string `json:"undoError,omitempty"`
	// FieldsKept says why spec fields the plugin's two steps took from
	// their owners are still the plugin's (StepResult.FieldsKept).
	FieldsKept string `json:"fieldsKept,omitempty"`
}

// APIServers are the API servers a migration's passes reached, told apart
// by their serving certificates (servers sharing one count as one).
type APIServers struct {
	// Switched showed, by their own discovery on the connection written
	// on, that they store at the storage version, before any answer of
	// theirs counted.
	Switched int `json:"switched"`
	// NotSwitched had not: nothing written through them counted.
	NotSwitched int `json:"notSwitched,omitempty"`
	// Untold: the answers did not tell servers apart (plain HTTP, or
	// clients not spread over connections): the switch check's reads and
	// the switch grace stand for what each server has seen.
	Untold bool `json:"untold,omitempty"`
	// SharedCertificate: one certificate answered for several servers (it
	// answered both as switched and as not): the pass began only once
	// every answer agreed, and the prune only if they still did after it.
	SharedCertificate bool `json:"sharedCertificate,omitempty"`
	// AgreeingRounds is how many rounds of answers in a row had to agree
	// behind a shared certificate.
	AgreeingRounds int `json:"agreeingRounds,omitempty"`
}

// NeedsAttention reports a migration that finished without proving every
// object re-stored, or without pruning when it was asked to.
func (r *Result) NeedsAttention(prune bool) bool {
	return !r.Complete() || r.Changed > 0 || (prune && !r.Pruned && r.PruneReason != PruneNothingToPrune) ||
		(r.Settle != nil && (!r.Settle.Complete() || r.Settle.Changed > 0)) ||
		(r.ManagedFields != nil && !r.ManagedFields.Complete()) ||
		(r.ServedAgain != nil && !r.ServedAgain.Undone)
}

// PruneReason says why status.storedVersions was or was not pruned.
type PruneReason string

const (
	PrunePruned           PruneReason = "Pruned"
	PruneNothingToPrune   PruneReason = "NothingToPrune"
	PruneDryRun           PruneReason = "DryRun"
	PruneDisabled         PruneReason = "Disabled"
	PruneIncomplete       PruneReason = "Incomplete"
	PruneStorageChanged   PruneReason = "StorageChanged"
	PruneCRDChanged       PruneReason = "CRDChanged"
	PruneClusterMigrating PruneReason = "ClusterMigrating"
	PruneStoredGained     PruneReason = "StoredVersionsGained"
	PruneStorageNotInSpec PruneReason = "StorageNotInSpec"
	PruneKeptChanging     PruneReason = "KeptChanging"
	// PruneServersDisagree: API servers behind one certificate disagreed,
	// after the pass, whether they serve the CRD as proven.
	PruneServersDisagree PruneReason = "APIServersDisagree"
	// PrunedByCluster: the cluster's own migrator pruned storedVersions
	// when its migration succeeded (Kubernetes 1.36+).
	PrunedByCluster PruneReason = "PrunedByCluster"
)
