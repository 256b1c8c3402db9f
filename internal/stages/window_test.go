package stages

import (
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/crdtest"
)

func rec(version string, from, to Stage) StepRecord {
	return StepRecord{Version: version, From: from, To: to, Changes: []RecordedChange{{Change: Change{Version: version, Field: FieldServed, From: "false", To: "true"}}}}
}

func TestPushStepKeepsOtherPairs(t *testing.T) {
	many := func(version string, n int) []StepRecord {
		var out []StepRecord
		for range n {
			out = append(out, rec(version, StageIntroduced, StageBridge))
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		steps []StepRecord
		push  StepRecord
		want  string
	}{
		{"first", nil, rec("v1", StageBridge, StageDeprecated), "[v1]"},
		{"the same pair", []StepRecord{rec("v1", StageIntroduced, StageBridge)}, rec("v1", StageBridge, StageDeprecated), "[v1 v1]"},
		{"a serve-again over an introduced v2", []StepRecord{rec("v2", StageAbsent, StageIntroduced)}, rec("v1", StageBlocked, StageDeprecated), "[v2 v1]"},
		{"v2 after v1's", []StepRecord{rec("v1", StageBridge, StageDeprecated), rec("v2", StageAbsent, StageIntroduced)}, rec("v2", StageIntroduced, StageBridge), "[v1 v2 v2]"},
		{"past the bound, the pair's own oldest goes", append([]StepRecord{rec("v2", StageAbsent, StageIntroduced)}, many("v1", maxRecordedSteps)...), rec("v1", StageBridge, StageDeprecated), fmt.Sprint(append([]string{"v2"}, names8("v1")...))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fmt.Sprint(tc.steps)
			got := PushStep(tc.steps, tc.push)
			var versions []string
			for _, s := range got {
				versions = append(versions, s.Version)
			}
			if fmt.Sprint(versions) != tc.want {
				t.Errorf("records %v, want %s", versions, tc.want)
			}
			if got[len(got)-1].To != tc.push.To {
				t.Errorf("the pushed record is not last: %+v", got)
			}
			if fmt.Sprint(tc.steps) != before {
				t.Error("PushStep changed the records it was given")
			}
		})
	}
}

func names8(v string) []string {
	out := make([]string, maxRecordedSteps)
	for i := range out {
		out[i] = v
	}
	return out
}

// introducedV2 is v1 storage, v1beta1 unserved in storedVersions, and v2 introduced by a recorded step.
func introducedV2() *apiextensionsv1.CustomResourceDefinition {
	crd := crdtest.Widgets([]string{"v1beta1", "v1"}, "v2:served", "v1:served,storage", "v1beta1:-")
	setSteps(crd, []StepRecord{{Version: "v2", From: StageAbsent, To: StageIntroduced,
		Changes: []RecordedChange{{Change: Change{Version: "v2", Field: FieldVersion, From: "", To: "served"}}}}})
	return crd
}

// A serve-again while another pair is in flight, taken back however it ends (its run's undo, or
// the next command's after a kill): the other pair's record stays, and its rollback is by record.
func TestServeAgainKeepsAnotherPairsRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		undo func(*testing.T, *apiextensionsv1.CustomResourceDefinition, *Plan) *Plan
	}{
		{"the run's undo", func(t *testing.T, after *apiextensionsv1.CustomResourceDefinition, p *Plan) *Plan {
			u, err := PlanUndo(after, p)
			if err != nil {
				t.Fatal(err)
			}
			return u
		}},
		{"the next command's, from the record", func(t *testing.T, after *apiextensionsv1.CustomResourceDefinition, _ *Plan) *Plan {
			w := OpenWindow(after)
			if w == nil || w.Kind != WindowServedAgain || fmt.Sprint(w.Versions) != "[v1beta1]" {
				t.Fatalf("window %+v", w)
			}
			u, err := PlanUndoWindow(after, w)
			if err != nil {
				t.Fatal(err)
			}
			return u
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := introducedV2()
			p, err := PlanServeAgain(crd, []string{"v1beta1"})
			if err != nil {
				t.Fatal(err)
			}
			if got := Steps(p.After); len(got) != 2 || got[0].Version != "v2" {
				t.Fatalf("records while served again: %+v, want v2's kept under the serve-again", got)
			}
			undone := tc.undo(t, p.After, p)
			if got, want := fmt.Sprint(undone.After.Spec.Versions), fmt.Sprint(crd.Spec.Versions); got != want {
				t.Errorf("undone: %s, want %s", got, want)
			}
			if got := Steps(undone.After); len(got) != 1 || got[0].Version != "v2" || got[0].To != StageIntroduced {
				t.Fatalf("records after the undo: %+v, want v2's alone", got)
			}
			if OpenWindow(undone.After) != nil {
				t.Error("a window is still open after the undo")
			}
			rb, err := PlanRollback(undone.After, "v2", RollbackOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rb.Restored == nil || rb.To != StageAbsent || SpecVersion(rb.After, "v2") != nil {
				t.Errorf("rollback of v2: restored %+v, to %s: want v2's recorded step taken back", rb.Restored, rb.To)
			}
		})
	}
}

// The undo of a window puts back what the step changed, nothing more: a version the owner had
// deprecated stays deprecated, one they had not goes back to not deprecated.
func TestUndoWindowPutsBackWhatTheStepChanged(t *testing.T) {
	for _, tc := range []struct {
		name, spec     string
		wantDeprecated bool
	}{
		{"not deprecated before", "v1beta1:-", false},
		{"deprecated by its owner", "v1beta1:deprecated", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := crdtest.Widgets([]string{"v1beta1", "v1"}, "v1:served,storage", tc.spec)
			p, err := PlanServeAgain(crd, []string{"v1beta1"})
			if err != nil {
				t.Fatal(err)
			}
			// What a kill leaves, and another writer's change meanwhile.
			left := p.After.DeepCopy()
			left.Labels = map[string]string{"touched": "yes"}
			w := OpenWindow(left)
			if w == nil {
				t.Fatal("no window open on the CRD the kill left")
			}
			u, err := PlanUndoWindow(left, w)
			if err != nil {
				t.Fatal(err)
			}
			v := SpecVersion(u.After, "v1beta1")
			if v.Served || v.Deprecated != tc.wantDeprecated {
				t.Errorf("v1beta1 after the undo: served %v deprecated %v, want unserved, deprecated %v", v.Served, v.Deprecated, tc.wantDeprecated)
			}
			if u.After.Labels["touched"] != "yes" || len(Steps(u.After)) != 0 {
				t.Errorf("after the undo: labels %v records %+v", u.After.Labels, Steps(u.After))
			}
		})
	}
}

func TestOpenWindow(t *testing.T) {
	released := crdtest.Widgets([]string{"v1beta1", "v1"}, "v1:served,storage", "v1beta1:-")
	legacy := released.DeepCopy()
	// A serve-again record of a release before windows were marked.
	setSteps(legacy, []StepRecord{{Version: "v1", From: StageBlocked, To: StageDeprecated,
		Changes: []RecordedChange{{Change: Change{Version: "v1beta1", Field: FieldServed, From: "false", To: "true"}}}}})
	switched := crdtest.Widgets([]string{"v1beta1", "v1"}, "v1:served,storage", "v1beta1:served,deprecated")
	setSteps(switched, []StepRecord{{Version: "v1", From: StageBridge, To: StageDeprecated, Window: WindowSwitchCheck,
		Changes: []RecordedChange{{Change: Change{Version: "v1beta1", Field: FieldStorage, From: "true", To: "false"}}, {Change: Change{Version: "v1", Field: FieldStorage, From: "false", To: "true"}}}}})
	checked := switched.DeepCopy()
	if p, err := PlanCloseChecked(checked, OpenWindow(checked)); err != nil {
		t.Fatal(err)
	} else {
		checked = p.After
	}
	for _, tc := range []struct {
		name     string
		crd      *apiextensionsv1.CustomResourceDefinition
		kind     WindowKind
		versions string
	}{
		{"none", released, "", ""},
		{"a serve-again of an older release", legacy, WindowServedAgain, "[v1beta1]"},
		{"a switch not yet checked", switched, WindowSwitchCheck, "[v1beta1]"},
		{"a switch checked", checked, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := OpenWindow(tc.crd)
			if tc.kind == "" {
				if w != nil {
					t.Fatalf("window %+v, want none", w)
				}
				return
			}
			if w == nil || w.Kind != tc.kind || fmt.Sprint(w.Versions) != tc.versions {
				t.Fatalf("window %+v, want %s of %s", w, tc.kind, tc.versions)
			}
			a := Assess(tc.crd)
			if a.Next.Step == nil || a.Next.Step.Op != OpMigrate || a.Window == nil {
				t.Errorf("next step %+v: want migrate, which closes the window", a.Next)
			}
		})
	}
	if got := Steps(checked); len(got) != 1 || got[0].Window != "" {
		t.Errorf("a checked switch's record: %+v, want kept, no longer open", got)
	}
}

// The way to a release starts by closing a window a stopped run left open, applied release or not.
func TestUpgradeClosesAWindowFirst(t *testing.T) {
	released := crdtest.Widgets([]string{"v1"}, "v1:served,storage", "v1beta1:-")
	p, err := PlanServeAgain(released, []string{"v1beta1"})
	if err != nil {
		t.Fatal(err)
	}
	open := p.After
	for _, tc := range []struct {
		name string
		next *apiextensionsv1.CustomResourceDefinition
	}{
		{"the release applied", released},
		{"a release that removes v1beta1", crdtest.Widgets(nil, "v1:served,storage")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			closed := PlanUpgrade(released, tc.next, UpgradeFacts{})
			u := PlanUpgrade(open, tc.next, UpgradeFacts{})
			if u.Done || len(u.Steps) != len(closed.Steps)+1 || strings.TrimSpace("before:migrate "+ways(closed)) != ways(u) {
				t.Fatalf("with the window open: %s (done %v), without: %s", ways(u), u.Done, ways(closed))
			}
			if n := u.Next(); n.Step == nil || n.Step.Op != OpMigrate || !strings.Contains(n.Reason, "served again") {
				t.Errorf("next %+v: want migrate, closing the window", n)
			}
		})
	}
}
