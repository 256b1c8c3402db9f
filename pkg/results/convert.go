package results

// ConvertResult is what a conversion of manifest files did, object by
// object.
type ConvertResult struct {
	// To is the version asked for.
	To      string            `json:"to"`
	Objects []ConvertedObject `json:"objects"`
	// Skipped are the files left as they were, each with why (a template
	// that is not YAML).
	Skipped []string `json:"skipped,omitempty"`
	// Kustomizations are the selectors of kustomizations in the input
	// moved with the objects they select.
	Kustomizations []KustomizeChange `json:"kustomizations,omitempty"`
	// NotConverted are the objects left as they were, each with why:
	// those of Objects not converted, and those of a kind the CRDs lack
	// in a group they define (a CRD the release drops).
	NotConverted []NotConverted `json:"notConverted"`
	// Others counts the objects of groups no CRD given defines (a
	// Deployment, a ConfigMap): left as they were, not checked.
	Others int `json:"others"`
}

// NotConvertedReason is why an object was left as it was.
type NotConvertedReason string

const (
	// NoCRD: no CRD given is of its kind, while others of its group are:
	// the release drops its CRD, and the API server would not take it.
	NoCRD NotConvertedReason = "noCRD"
	// AtTarget: at the version asked for already, and its CRD's schema
	// takes it.
	AtTarget NotConvertedReason = "atVersion"
	// RejectedBySchema: its CRD's schema refuses it, as it is or
	// converted (Errors say which fields).
	RejectedBySchema NotConvertedReason = "rejected"
	// Lossy: converting it would lose the fields Lost names.
	Lossy NotConvertedReason = "lossy"
	// RefusedByConverter: the converter, or a kustomization that selects
	// it with objects that stay, keeps it at its version (Message).
	RefusedByConverter NotConvertedReason = "refused"
	// TargetMissing: its CRD has no such version.
	TargetMissing NotConvertedReason = "noSuchVersion"
	// TargetNotServed: its CRD has the version and does not serve it.
	TargetNotServed NotConvertedReason = "notServed"
)

// Attention says whether the reason needs a person: the API server would
// refuse the object, or converting it would lose data.
func (r NotConvertedReason) Attention() bool {
	return r == NoCRD || r == RejectedBySchema || r == Lossy || r == RefusedByConverter
}

// NotConverted is one object of the input left as it was.
type NotConverted struct {
	// Where is file:line: document N[, item M].
	Where      string `json:"where"`
	File       string `json:"file"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// CRD is its CRD's name, "" for noCRD.
	CRD    string             `json:"crd,omitempty"`
	Reason NotConvertedReason `json:"reason"`
	// Message says the reason in words.
	Message string `json:"message"`
	// Errors are the field errors its CRD's schema refuses it for.
	Errors []string `json:"errors,omitempty"`
	// Lost are the fields converting it would lose.
	Lost []FieldDiff `json:"lost,omitempty"`
}

// Attention counts the objects left that need a person.
func (r *ConvertResult) Attention() int {
	n := 0
	for _, o := range r.NotConverted {
		if o.Reason.Attention() {
			n++
		}
	}
	return n
}

// KustomizeChange is one selector of a kustomization moved to the new
// version with its objects.
type KustomizeChange struct {
	// Where is the kustomization's file:line.
	Where string `json:"where"`
	File  string `json:"file"`
	// Field is the selector, patches[0].target.version.
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// Outcome is what became of one custom resource.
type Outcome string

const (
	// Converted objects read at the new version now.
	Converted Outcome = "converted"
	// AtVersion objects were at the version already.
	AtVersion Outcome = "unchanged"
	// Refused objects were left at their version: the conversion would
	// lose what Lost names.
	Refused Outcome = "refused"
	// Rejected objects were left at their version: the API server would
	// refuse them (its schema, its CEL rules, a field it does not
	// declare) at the new one, or as they are when already there or not
	// converted, for Reason.
	Rejected Outcome = "rejected"
	// NoSuchVersion objects are of a CRD that has no such version.
	NoSuchVersion Outcome = "noSuchVersion"
	// NotServed objects are of a CRD that has the version but does not
	// serve it.
	NotServed Outcome = "notServed"
)

// ConvertedObject is one custom resource found in the input.
type ConvertedObject struct {
	// Where is file:line: document N[, item M].
	Where     string  `json:"where"`
	File      string  `json:"file"`
	CRD       string  `json:"crd"`
	Kind      string  `json:"kind"`
	Namespace string  `json:"namespace,omitempty"`
	Name      string  `json:"name"`
	From      string  `json:"from"`
	To        string  `json:"to"`
	Outcome   Outcome `json:"outcome"`
	// Lost are the fields the new version does not keep: dropped by its
	// schema, or changed by the converter's round trip. With loss
	// accepted, a converted object may name some too.
	Lost []FieldDiff `json:"lost,omitempty"`
	// Reason is why an object that loses nothing was refused, or why the
	// API server would reject it.
	Reason string `json:"reason,omitempty"`
	// Errors are the field errors a rejected object is refused for.
	Errors []string `json:"errors,omitempty"`
}

// Count is how many objects had the outcome.
func (r *ConvertResult) Count(o Outcome) int {
	n := 0
	for _, obj := range r.Objects {
		if obj.Outcome == o {
			n++
		}
	}
	return n
}
