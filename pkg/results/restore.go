package results

import "time"

// RestoreResult counts what the rewrite pass did.
type RestoreResult struct {
	Listed int64 `json:"listed"`
	// Rewritten objects came back with a new resourceVersion: they were
	// stored at another version (or changed by someone since listed). In
	// a server dry run, which never gets a new resourceVersion, the
	// objects accepted while a migration is pending: each one the run
	// re-stores.
	Rewritten int64 `json:"rewritten"`
	// Unchanged objects were already stored at the storage version.
	Unchanged int64 `json:"unchanged"`
	// Gone were deleted, Conflicted changed by someone else: both done.
	Gone       int64 `json:"gone"`
	Conflicted int64 `json:"conflicted"`
	// NotAtOld objects the converter was asked to express at every old
	// version: a read at an object's stored version never converts, so
	// each is stored at none of them, and was not written.
	NotAtOld int64 `json:"notAtOld,omitempty"`
	Failed   int64 `json:"failed"`
	// Lost objects were not re-stored: checked first, they did not come
	// back intact from old→new→old (the losses are in Result.Proofs).
	Lost int64 `json:"lost,omitempty"`
	// Changed objects were written, but the answer shows the write changed
	// them (mutating admission) or dropped their managedFields (an object
	// near the size limit): listed among Failures, reason ChangedByWrite.
	// A generation moved only by the storage version's defaults is not
	// among them (Result.DefaultsWritten).
	Changed  int64     `json:"changed"`
	Failures []Failure `json:"failures"`
	// Requests counts what the pass sent: every page listed and every
	// attempt of every request about an object (a check's dry run, a
	// write, a read again after a conflict).
	Requests int64 `json:"requests"`
	// ExpiredContinues counts list continue tokens that expired (410) and
	// were resumed from the same key.
	ExpiredContinues int `json:"expiredContinues"`
	// Stopped says why the pass ended before every object was written;
	// StopReason says it in a word a program can branch on.
	Stopped    string     `json:"stopped,omitempty"`
	StopReason StopReason `json:"stopReason,omitempty"`
	// Concurrency is what the adaptive limit of requests in flight did.
	Concurrency *Concurrency `json:"concurrency,omitempty"`
	// Took is the pass's own time, from its first list to its last write:
	// its objects/s, where a migration's duration also holds the waits
	// around it (the switch, the grace, the second pass, the prune).
	Took time.Duration `json:"took"`
}

// Concurrency is the adaptive limit of requests in flight over a pass.
type Concurrency struct {
	// Final is the limit at the end, Peak the highest it reached, Max the
	// bound it adapted under.
	Final int `json:"final"`
	Peak  int `json:"peak"`
	Max   int `json:"max"`
	// Gentle says the pass was paced by the tail of the server's latency;
	// Rate and PeakRate are its pace, requests started a second, at the
	// end and at most. Final and Peak are then what the pace kept in
	// flight.
	Gentle   bool    `json:"gentle,omitempty"`
	Rate     float64 `json:"rate,omitempty"`
	PeakRate float64 `json:"peakRate,omitempty"`
}

// Complete reports a pass that wrote every object without a failure.
func (r *RestoreResult) Complete() bool { return r.Failed == 0 && r.Lost == 0 && r.Stopped == "" }

// StopReason says why a pass over objects ended before every object was
// written, in a word a program can branch on.
type StopReason string

const (
	StopInterrupted       StopReason = "Interrupted"
	StopUnreachable       StopReason = "Unreachable"
	StopConversionFailing StopReason = "ConversionFailing"
	StopListFailed        StopReason = "ListFailed"
	StopClientDryRun      StopReason = "ClientDryRun"
	// StopClusterFailed: the cluster's own migration (--via=cluster)
	// reported Failed.
	StopClusterFailed StopReason = "ClusterMigrationFailed"
	// StopNotProven: nothing was re-stored: the CRD changed as the
	// migration began, so what it proved of old→new→old may not hold.
	StopNotProven StopReason = "NotProven"
	// StopCRDChanged: the CRD moved to another generation while the pass
	// wrote (Stopped says what moved); no write went out after the pass
	// saw it, and what was proven holds for the generation it began with.
	StopCRDChanged StopReason = "CRDChanged"
	// StopError: the migration of this CRD ended in an error (Stopped
	// says which) while others of the same run went on.
	StopError StopReason = "Error"
)
