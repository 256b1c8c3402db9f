package migrate_test

import (
	"encoding/json"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
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
		crd.Annotations[lifecycle.StepsAnnotation] = string(raw)
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
	s.forgeSteps(t, []lifecycle.StepRecord{{Version: "v1", From: lifecycle.StageAbsent, To: lifecycle.StageIntroduced, Changes: []lifecycle.RecordedChange{
		{Change: lifecycle.Change{Version: "v1beta1", Field: lifecycle.FieldStorage, From: "false", To: "true"}},
		{Change: lifecycle.Change{Version: "v1", Field: lifecycle.FieldStorage, From: "true", To: "false"}},
	}}})
	before := s.legacyAtV1beta1(t)
	_, err := migrate.Rollback(t.Context(), s.clients, s.crd, migrate.RollbackOptions{Version: "v1", SwitchTimeout: 30 * time.Second})
	t.Logf("rollback: %v", err)
	crd, gerr := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if gerr != nil {
		t.Fatal(gerr)
	}
	if sv := lifecycle.StorageVersion(crd); sv != "v1beta1" {
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
