package lifecycle

// Stage is where one version stands in its lifecycle, inferred from the CRD.
type Stage string

const (
	// StageStorage is the version objects are written at.
	StageStorage Stage = "storage"
	// StageIntroduced is a served version newer than storage, not yet verified.
	StageIntroduced Stage = "introduced"
	// StageBridge is introduced with a round trip verified against current storage and generation.
	StageBridge Stage = "bridge"
	// StageDeprecated is served, marked deprecated and not storage.
	StageDeprecated Stage = "deprecated"
	// StageBlocked is no longer served but still convertible.
	StageBlocked Stage = "blocked"
	// StageServed is served, older than storage and not deprecated: a deprecation never announced.
	StageServed Stage = "served"
	// StageMissing is in storedVersions but gone from spec.versions: every CRD update fails meanwhile.
	StageMissing Stage = "missing"
)

// Stages lists the forward path of a version pair, in order.
var Stages = []Stage{StageIntroduced, StageBridge, StageDeprecated, StageBlocked, StageRemoved}

// StageRemoved is the last step: the old version is gone, so no version is ever shown in it.
const StageRemoved Stage = "removed"

// EditsVersions says whether reaching the stage edits spec.versions, which a GitOps sync would
// revert: every stage but bridge, which records a check of the objects.
func (s Stage) EditsVersions() bool { return s != StageBridge }
