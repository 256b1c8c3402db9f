package migrate_test

import (
	"encoding/json"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// forgeSteps writes a step record on the CRD as any writer of it can.
func (s *switched) forgeSteps(t *testing.T, steps []lifecycle.StepRecord) {
	t.Helper()
	raw, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	s.editCRD(t, func(crd *apiextensionsv1.CustomResourceDefinition) {
		if crd.Annotations == nil {
			crd.Annotations = map[string]string{}
		}
		crd.Annotations[stages.StepsAnnotation] = string(raw)
	})
}

// A step record is a plain annotation: it may decide which flags go back,
// never that a storage switch goes unchecked. v1beta1 is storage, v1 (which
// drops spec.legacy) introduced. A record claiming that the step to
// introduced moved storage from v1 to v1beta1 makes rollback "restore"
// storage to v1: a switch forward, away from v1beta1, where every object
// is stored. Before, the check after the switch looked at v1 (the pair's
// new version, now storage: nothing to check), passed, and the switch
// stood: the next write of each object dropped spec.legacy.
func TestAForgedRecordSwitchesNoStorageUnchecked(t *testing.T) {
	s := newUnswitched(t, sandbox.Options{}, legacyWidgets(10), dropLegacyFromV1)
	s.forgeSteps(t, []lifecycle.StepRecord{{Version: "v1", From: stages.StageAbsent, To: lifecycle.StageIntroduced, Changes: []lifecycle.RecordedChange{
		{Change: lifecycle.Change{Version: "v1beta1", Field: lifecycle.FieldStorage, From: "false", To: "true"}},
		{Change: lifecycle.Change{Version: "v1", Field: lifecycle.FieldStorage, From: "true", To: "false"}},
	}}})
	before := s.legacyAtV1beta1(t)
	_, err := migration.Rollback(t.Context(), s.clients, s.crd, migration.RollbackOptions{Version: "v1", SwitchTimeout: 30 * time.Second})
	t.Logf("rollback: %v", err)
	crd, gerr := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if gerr != nil {
		t.Fatal(gerr)
	}
	if sv := stages.StorageVersion(crd); sv != "v1beta1" {
		t.Errorf("after rollback with a forged record the storage version is %s (err %v), want v1beta1: a switch nothing checked", sv, err)
	}
	// A client's write of every object: nothing it did not write may go.
	w := s.fx.Dynamic.Resource(v1beta1)
	list, lerr := w.List(t.Context(), metav1.ListOptions{})
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, o := range list.Items {
		if _, err := w.Namespace(o.GetNamespace()).Patch(t.Context(), o.GetName(), types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if after := s.legacyAtV1beta1(t); after != before {
		t.Errorf("spec.legacy held by %d objects before the rollback, %d after a label write of each", before, after)
	}
}

// A record decides which flags go back; it takes out no version but the
// one its step brought in. v1alpha1 is served beside v1beta1 (storage) and
// v1 (introduced); a record of the step to introduced that also names
// v1alpha1 as added made rollback take v1alpha1 out of spec.versions with
// its schema: its clients get 404, and nothing brings it back.
func TestARecordTakesOutOnlyTheVersionItsStepBroughtIn(t *testing.T) {
	crd := fixtures.CRD("example.com", "Widget", "widgets", apiextensionsv1.NamespaceScoped, true,
		fixtures.Version{Name: "v1alpha1", Served: true},
		fixtures.Version{Name: "v1beta1", Served: true, Storage: true},
		fixtures.Version{Name: "v1", Served: true})
	s := newWidgets(t, sandbox.Options{}, crd, widgets(2))
	s.forgeSteps(t, []lifecycle.StepRecord{{Version: "v1", From: stages.StageAbsent, To: lifecycle.StageIntroduced, Changes: []lifecycle.RecordedChange{
		{Change: lifecycle.Change{Version: "v1alpha1", Field: lifecycle.FieldVersion, From: "", To: "added"}},
		{Change: lifecycle.Change{Version: "v1", Field: lifecycle.FieldVersion, From: "", To: "added"}},
	}}})
	if _, err := migration.Rollback(t.Context(), s.clients, s.crd, migration.RollbackOptions{Version: "v1", SwitchTimeout: 30 * time.Second}); err != nil {
		t.Fatalf("rollback v1: %v", err)
	}
	now, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stages.SpecVersion(now, "v1alpha1") == nil {
		t.Errorf("rollback of v1's introduction took v1alpha1 out of spec.versions too")
	}
	if stages.SpecVersion(now, "v1") != nil {
		t.Errorf("rollback of v1's introduction left v1 in spec.versions")
	}
}
