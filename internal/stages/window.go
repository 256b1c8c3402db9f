package stages

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

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

func windowChanges(w *Window) string {
	var out []string
	for _, c := range w.Record.Changes {
		if c.Field == FieldServed || c.Field == FieldDeprecated || c.Field == FieldDeprecationWarning {
			out = append(out, fmt.Sprintf("%s.%s back to %q", c.Version, c.Field, c.From))
		}
	}
	return strings.Join(out, ", ")
}

// windowPlan is the recorded step as its run held it, for PlanUndo.
func windowPlan(w *Window) *Plan {
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
	return PlanUndo(crd, windowPlan(w), forget...)
}

// PlanCloseChecked plans closing a switch's window once its check held: the switch stands, its
// record stays as the step's, no longer open.
func PlanCloseChecked(crd *apiextensionsv1.CustomResourceDefinition, w *Window) (*Plan, error) {
	p := &Plan{CRD: crd.Name, Pair: windowPlan(w).Pair, From: w.Record.From, To: w.Record.To, After: crd.DeepCopy()}
	steps := Steps(p.After)
	i := lastOf(steps, w.Record.Version)
	if i < 0 || steps[i].Window != w.Kind || steps[i].From != w.Record.From || steps[i].To != w.Record.To {
		return nil, refuse(nil, "%s: the record of the switch to %s changed since its check began", crd.Name, w.Record.Version)
	}
	steps[i].Window = ""
	setSteps(p.After, steps)
	return p, nil
}

// WindowReason says what is open and what closing it does, for status, check and the upgrade plan.
func WindowReason(w *Window) string {
	vs := strings.Join(w.Versions, ", ")
	if w.Kind == WindowSwitchCheck {
		return fmt.Sprintf("a run was stopped after switching storage from %s to %s and before checking that every object at %s survives the switch (step record on the CRD): migrate runs that check first, keeping the switch or switching back",
			vs, switchedTo(w), vs)
	}
	return fmt.Sprintf("a migrate was stopped while %s was served again, deprecated, for its checks (step record on the CRD): migrate first puts back what that step changed (%s), then goes on",
		vs, windowChanges(w))
}

// WindowAdvice is the window as a finding's way out: its words and the command that closes it.
func WindowAdvice(w *Window) Advice {
	return Advise(w.Step(), "%s", WindowReason(w))
}

// MarkOpen marks the plan's step as one its run still owes an end to (kind): its record says
// so until the run closes it.
func MarkOpen(p *Plan, kind WindowKind) {
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
