package results

import (
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// Loss is an object that did not come back as it was read.
type Loss struct {
	Namespace string      `json:"namespace,omitempty"`
	Name      string      `json:"name"`
	Version   string      `json:"version"`
	Diffs     []FieldDiff `json:"diffs,omitempty"`
	// Error is set when the round trip failed outright (a conversion or
	// validation error) rather than returning a different object.
	Error string `json:"error,omitempty"`
}

// VerifyResult is what a round-trip check found.
type VerifyResult struct {
	Storage  string   `json:"storage"`
	Versions []string `json:"versions"`
	// RoundTrips are the conversions the checks went through, one per
	// version checked ("v1→v1beta1→v1": read at v1, converted to the storage
	// version v1beta1 and back).
	RoundTrips []string `json:"roundTrips"`
	// Unchecked are the round trips this check could not see, each with
	// what proves it instead, or when it will be checked.
	Unchecked []string `json:"unchecked,omitempty"`
	// Objects were checked at every version; Skipped were deleted or
	// changed between the read and the check, so not checked.
	Objects int64 `json:"objects"`
	Skipped int64 `json:"skipped"`
	// NotStored the converter refused to express at a version checked,
	// so they are not stored there (only where the check asked that).
	NotStored int64  `json:"notStored,omitempty"`
	Losses    []Loss `json:"losses"`
	// NotRecorded says why a passed check was not recorded on the CRD.
	NotRecorded string `json:"notRecorded,omitempty"`
}

// Passed reports a check in which every object round-tripped.
func (r *VerifyResult) Passed() bool { return len(r.Losses) == 0 }

// Verification is the record of a passed check, for the bridge stage.
func (r *VerifyResult) Verification() lifecycle.Verification {
	return lifecycle.Verification{From: r.Storage, Objects: r.Objects}
}

// FieldDiff is one field that differs between two forms of an object: its
// JSONPath-style path (spec.containers[3].image, metadata.annotations['a.b/c'])
// and both values as JSON, in full; Absent where one side lacks it.
type FieldDiff struct {
	Path   string `json:"path"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// Absent stands for a value one side of a diff lacks.
const Absent = "<absent>"
