package check

import (
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// plannedRules are the findings whose fix is the way to the release itself.
var plannedRules = []string{"storedVersionRemoved", "managedFieldsOfRemovedVersion"}

// planned gives the findings whose fix is the way to the release the plan's steps
// (stages.PlanUpgrade): check, status --release and upgrade then say the same next step, a
// refused migrate gets its ways on instead of the same migrate, and the steps are ordered so no
// client fails between them.
func planned(found []results.Finding, live, next *apiextensionsv1.CustomResourceDefinition) []results.Finding {
	if live == nil || !slices.ContainsFunc(found, func(f results.Finding) bool { return slices.Contains(plannedRules, f.Rule) }) {
		return found
	}
	var entries []string
	for _, f := range found {
		if f.Rule == "managedFieldsOfRemovedVersion" {
			entries = strings.Split(f.Version, ", ")
		}
	}
	fix := planFix(live, next, entries)
	for i, f := range found {
		if slices.Contains(plannedRules, f.Rule) {
			found[i].Fix = fix
		}
	}
	return found
}

// planFix is the plan from live to next as a finding's fix, each step in its phase's words.
func planFix(live, next *apiextensionsv1.CustomResourceDefinition, entries []string) []lifecycle.Advice {
	u := stages.PlanUpgrade(live, next, stages.UpgradeFacts{Entries: entries, Apply: stages.HowApplied(live, "NEW_MANIFEST")})
	fix := make([]lifecycle.Advice, 0, len(u.Steps))
	for _, w := range u.Steps {
		a := w.Advice
		switch {
		case w.Phase == lifecycle.PhaseApply:
			a.Text = "then apply the release: " + a.Text
		case w.Phase == lifecycle.PhaseAfter:
			a.Text = "after the apply, " + a.Text
		}
		if w.Decide {
			a.Text = "decide: " + a.Text
		}
		fix = append(fix, a)
	}
	return fix
}
