package stages

import (
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/crdtest"
)

// deprecatedV1 is v1 made storage by a recorded step to deprecated (withRecord), or by hand.
func deprecatedV1(withRecord bool) *apiextensionsv1.CustomResourceDefinition {
	crd := crdtest.Widgets([]string{"v1beta1", "v1"}, "v1:served,storage", "v1beta1:served,deprecated")
	if withRecord {
		setSteps(crd, []StepRecord{{Version: "v1", From: StageBridge, To: StageDeprecated, Changes: []RecordedChange{
			{Change: Change{Version: "v1", Field: FieldStorage, From: "false", To: "true"}},
			{Change: Change{Version: "v1beta1", Field: FieldStorage, From: "true", To: "false"}},
			{Change: Change{Version: "v1beta1", Field: FieldDeprecated, From: "false", To: "true"}},
		}}})
	}
	return crd
}

// A step back that switches storage is a window until its check holds (rule 27): its record is
// on the CRD, marked, with the record it takes back, whichever way it ends: the run's undo or
// the next command's puts back the CRD and the step's record exactly once; the check holding
// leaves neither record, as a step back never marked leaves them.
func TestSwitchBackIsAWindow(t *testing.T) {
	for _, withRecord := range []bool{true, false} {
		for _, end := range []string{"the run's undo", "the next command's undo", "the check holds"} {
			t.Run(fmt.Sprintf("record %v, %s", withRecord, end), func(t *testing.T) {
				crd := deprecatedV1(withRecord)
				p, err := PlanRollback(crd, "v1", RollbackOptions{SwitchStorage: true})
				if err != nil {
					t.Fatal(err)
				}
				OpenSwitchBack(p, crd)
				w := OpenWindow(p.After)
				if w == nil || !w.StepBack() || fmt.Sprint(w.Versions) != "[v1]" || StorageVersion(p.After) != "v1beta1" {
					t.Fatalf("window %+v on %v", w, p.After.Spec.Versions)
				}
				if !strings.Contains(WindowReason(w), "switching storage from v1 to v1beta1") {
					t.Errorf("reason: %s", WindowReason(w))
				}
				var done *Plan
				switch end {
				case "the run's undo":
					done, err = PlanUndo(p.After, p, "v1")
				case "the next command's undo":
					done, err = PlanUndoWindow(p.After, w, "v1")
				default:
					done, err = PlanCloseSwitchBack(p.After, w)
				}
				if err != nil {
					t.Fatal(err)
				}
				if OpenWindow(done.After) != nil {
					t.Errorf("a window is open after %s: %+v", end, Steps(done.After))
				}
				wantSteps, wantStorage := EncodeSteps(Steps(crd)), "v1"
				if end == "the check holds" {
					wantSteps, wantStorage = "", "v1beta1"
				}
				if got := EncodeSteps(Steps(done.After)); got != wantSteps {
					t.Errorf("records after %s:\n%s\nwant\n%s", end, got, wantSteps)
				}
				if s := StorageVersion(done.After); s != wantStorage {
					t.Errorf("storage after %s: %s, want %s", end, s, wantStorage)
				}
			})
		}
	}
}

// The ways on from a switch back undone for a loss name the version and the fields to keep, the
// loss to accept by name, and the release not taken.
func TestSwitchBackWaysNameVersionAndFields(t *testing.T) {
	live := crdtest.Widgets([]string{"v1beta1", "v1beta2", "v1beta3"}, "v1beta1:served", "v1beta2:served", "v1beta3:served,storage")
	next := crdtest.Widgets(nil, "v1beta1:served,storage")
	r := Refused{Storage: "v1beta3", Generation: 3, Objects: 4, First: []string{"ns/a", "ns/b"}, Fields: []string{"spec.proxyProtocol"}, To: "v1beta2"}
	live.Annotations = map[string]string{SwitchBackAnnotation: r.Annotation()}
	u := PlanUpgrade(live, next, UpgradeFacts{Apply: Advise(nil, "apply")})
	var texts []string
	for _, w := range u.Steps {
		texts = append(texts, w.Text)
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{
		"add spec.proxyProtocol to the schema of v1beta2 (and of every version down to v1beta1",
		"ns/a, ns/b and 2 more",
		"accept the loss of spec.proxyProtocol on 4 objects by name",
		"stay on the current release: v1beta3 stays the storage version",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the ways on lack %q:\n%s", want, all)
		}
	}
	if n := u.Next(); n.Action != ActionFix {
		t.Errorf("next %+v, want the decision", n)
	}
}
