package lifecycle

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// WindowKind says what a run still owes after a step it took for its own work.
type WindowKind string

const (
	// WindowServedAgain: old versions served again, deprecated, for migrate's checks; the run
	// unserves them after. Undone exactly as recorded.
	WindowServedAgain WindowKind = "servedAgain"
	// WindowSwitchCheck: a storage switch whose old→new→old check has not finished; the check
	// keeps it or switches back.
	WindowSwitchCheck WindowKind = "switchCheck"
)

// Window is a step whose run has not finished it: killed (kill -9, a node lost), the run left
// its record on the CRD, and the next command that touches the CRD closes it first.
type Window struct {
	CRD  string     `json:"crd"`
	Kind WindowKind `json:"kind"`
	// Versions are the versions served again, or the one the switch took storage from.
	Versions []string `json:"versions"`
	// Record is the step that opened it.
	Record StepRecord `json:"record"`
}

// OpenWindow is the window a run left open on the CRD, nil if none. A serve-again record of an
// older release (no Window, blocked → deprecated, a step no forward one takes) is one too.
func OpenWindow(crd *apiextensionsv1.CustomResourceDefinition) *Window {
	steps := Steps(crd)
	for i := len(steps) - 1; i >= 0; i-- {
		rec := steps[i]
		kind := rec.Window
		if kind == "" && rec.From == StageBlocked && rec.To == StageDeprecated {
			kind = WindowServedAgain
		}
		if kind == "" {
			continue
		}
		w := &Window{CRD: crd.Name, Kind: kind, Record: rec}
		for _, c := range rec.Changes {
			switch {
			case kind == WindowServedAgain && c.Field == FieldServed && c.To == "true":
				w.Versions = append(w.Versions, c.Version)
			case kind == WindowSwitchCheck && c.Field == FieldStorage && c.From == "true":
				w.Versions = append(w.Versions, c.Version)
			}
		}
		return w
	}
	return nil
}

// Step is the command that closes the window: migrate closes any before it does anything else.
func (w *Window) Step() *Step { return MigrateStep(w.CRD) }

// Reason says what is open and what closing it does, for status, check and the upgrade plan.
func (w *Window) Reason() string {
	vs := strings.Join(w.Versions, ", ")
	if w.Kind == WindowSwitchCheck {
		return fmt.Sprintf("a run was stopped after switching storage from %s to %s and before checking that every object at %s survives the switch (step record on the CRD): migrate runs that check first, keeping the switch or switching back",
			vs, w.switchedTo(), vs)
	}
	return fmt.Sprintf("a migrate was stopped while %s was served again, deprecated, for its checks (step record on the CRD): migrate first puts back what that step changed (%s), then goes on",
		vs, w.changes())
}

func (w *Window) changes() string {
	var out []string
	for _, c := range w.Record.Changes {
		if c.Field == FieldServed || c.Field == FieldDeprecated || c.Field == FieldDeprecationWarning {
			out = append(out, fmt.Sprintf("%s.%s back to %q", c.Version, c.Field, c.From))
		}
	}
	return strings.Join(out, ", ")
}

// Advice is the window as a finding's way out: its words and the command that closes it.
func (w *Window) Advice() Advice {
	return Advise(w.Step(), "%s", w.Reason())
}

// plan is the recorded step as its run held it, for PlanUndo.
func (w *Window) plan() *Plan {
	rec := w.Record
	p := &Plan{CRD: w.CRD, Pair: Pair{New: rec.Version}, From: rec.From, To: rec.To, Record: &rec}
	if len(w.Versions) > 0 {
		p.Pair.Old = w.Versions[0]
	}
	for _, c := range rec.Changes {
		p.Changes = append(p.Changes, c.Change)
	}
	return p
}

// PlanUndoWindow plans putting back exactly what the window's step recorded it changed (a
// deprecated: false it set true goes back to false), and dropping its record; forget's
// verification records go too.
func PlanUndoWindow(crd *apiextensionsv1.CustomResourceDefinition, w *Window, forget ...string) (*Plan, error) {
	return PlanUndo(crd, w.plan(), forget...)
}

// PlanCloseChecked plans closing a switch's window once its check held: the switch stands, its
// record stays as the step's, no longer open.
func PlanCloseChecked(crd *apiextensionsv1.CustomResourceDefinition, w *Window) (*Plan, error) {
	p := &Plan{CRD: crd.Name, Pair: w.plan().Pair, From: w.Record.From, To: w.Record.To, After: crd.DeepCopy()}
	steps := Steps(p.After)
	i := lastOf(steps, w.Record.Version)
	if i < 0 || steps[i].Window != w.Kind || steps[i].From != w.Record.From || steps[i].To != w.Record.To {
		return nil, refuse(nil, "%s: the record of the switch to %s changed since its check began", crd.Name, w.Record.Version)
	}
	steps[i].Window = ""
	setSteps(p.After, steps)
	return p, nil
}

// OpenWindow marks the plan's step as one its run still owes an end to (kind): its record says
// so until the run closes it.
func (p *Plan) OpenWindow(kind WindowKind) {
	if p.Record == nil {
		return
	}
	p.Record.Window = kind
	steps := Steps(p.After)
	if i := lastOf(steps, p.Record.Version); i >= 0 {
		steps[i].Window = kind
		setSteps(p.After, steps)
	}
}
