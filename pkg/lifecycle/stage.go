package lifecycle

// Stage is where one version stands in its lifecycle, inferred from the CRD.
type Stage string

const (
	// StageStorage is the version objects are written at.
	StageStorage Stage = "storage"
	// StageIntroduced is a served version newer than storage, not yet verified.
	StageIntroduced Stage = "introduced"
	// StageBridge is an introduced version whose round-trip conversion was
	// verified against the current storage version and CRD generation.
	StageBridge Stage = "bridge"
	// StageDeprecated is served, marked deprecated and not storage.
	StageDeprecated Stage = "deprecated"
	// StageBlocked is no longer served but still convertible.
	StageBlocked Stage = "blocked"
	// StageServed is served, older than storage and not deprecated: a
	// deprecation that was never announced to clients.
	StageServed Stage = "served"
	// StageMissing is a version named in status.storedVersions that is gone
	// from spec.versions; every later update of the CRD fails while it stays.
	StageMissing Stage = "missing"
)

// Stages lists the forward path of a version pair, in order.
var Stages = []Stage{StageIntroduced, StageBridge, StageDeprecated, StageBlocked, StageRemoved}

// StageRemoved is the last step: the old version is gone from spec.versions.
// No version is ever shown in it, since it no longer exists.
const StageRemoved Stage = "removed"

// EditsVersions says whether reaching the stage edits spec.versions, which
// a GitOps tool syncing the CRD would put back: every stage but bridge,
// which records a check of the cluster's objects.
func (s Stage) EditsVersions() bool { return s != StageBridge }
