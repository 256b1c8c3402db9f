package stages

import (
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/crdtest"
)

func TestPlanServeAgain(t *testing.T) {
	released := func() *apiextensionsv1.CustomResourceDefinition {
		return crdtest.Widgets([]string{"v1alpha1", "v1beta1", "v1"}, "v1:served,storage", "v1beta1:-", "v1alpha1:deprecated")
	}
	for _, tc := range []struct {
		name     string
		versions []string
		changes  int
		refused  bool
	}{
		{"one unserved version", []string{"v1beta1"}, 2, false},
		{"one already deprecated", []string{"v1alpha1"}, 1, false},
		{"both", []string{"v1beta1", "v1alpha1"}, 3, false},
		{"the storage version", []string{"v1"}, 0, true},
		{"a version the CRD lacks", []string{"v2"}, 0, true},
		{"none", nil, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := released()
			p, err := PlanServeAgain(crd, tc.versions)
			if tc.refused {
				if err == nil {
					t.Fatalf("planned %+v, want a refusal", p.Changes)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Changes) != tc.changes {
				t.Errorf("changes %+v, want %d", p.Changes, tc.changes)
			}
			for _, v := range tc.versions {
				if sv := SpecVersion(p.After, v); !sv.Served || !sv.Deprecated {
					t.Errorf("%s after: %+v", v, sv)
				}
			}
			if SpecVersion(crd, tc.versions[0]).Served {
				t.Error("the plan changed the CRD it was given")
			}
			// Its undo gives back the CRD as released, the record gone.
			undo, err := PlanUndo(p.After, p)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fmt.Sprint(undo.After.Spec.Versions), fmt.Sprint(crd.Spec.Versions); got != want {
				t.Errorf("undone: %s, want %s", got, want)
			}
			if len(Steps(undo.After)) != 0 {
				t.Errorf("record left: %+v", Steps(undo.After))
			}
		})
	}
}
