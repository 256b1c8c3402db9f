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
	// Rejected objects were left at their version: at the new one, the API
	// server would refuse them (its schema, its CEL rules), for Reason.
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
