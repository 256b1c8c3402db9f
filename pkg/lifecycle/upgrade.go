package lifecycle

// Phase is when a step on the way to a release runs, around the owner's apply of it.
type Phase string

const (
	PhaseBefore Phase = "before"
	PhaseApply  Phase = "apply"
	PhaseAfter  Phase = "after"
)

// Waypoint is one step of the way to a release. Decide marks a choice only a person makes (a
// loss to accept, a manifest to change): a walk stops there.
type Waypoint struct {
	Phase Phase `json:"phase"`
	Advice
	Decide bool `json:"decide,omitempty"`
}

// Upgrade is the way from a CRD as it is to a release's: every step, in order. It is planned
// anew from the CRD each time, so taking a step and planning again goes on where it stood.
type Upgrade struct {
	CRD string `json:"crd"`
	// Done: the release's versions are applied and nothing is stored at another version.
	Done  bool       `json:"done"`
	Steps []Waypoint `json:"steps"`
}

// Next is the first step of the way, as status shows a next step.
func (u Upgrade) Next() Next {
	if u.Done {
		return Next{Action: ActionNone, Reason: "the release is applied and every object is stored at its storage version"}
	}
	w := u.Steps[0]
	switch {
	case w.Decide:
		return Next{Action: ActionFix, Step: w.Step, Reason: w.Text}
	case w.Phase == PhaseApply:
		return Next{Action: ActionReady, Reason: "apply the release: " + w.Text}
	}
	return Next{Action: ActionRun, Step: w.Step, Reason: w.Text}
}
