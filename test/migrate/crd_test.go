package migrate_test

import (
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// Someone edits the CRD between the step's read and its write: the write
// conflicts, the step is re-planned on their edit, and both survive.
func TestApplyStepReplansOnConcurrentEdit(t *testing.T) {
	c, crd := deprecatedWidgets(t)
	crds := c.CRDs.ApiextensionsV1().CustomResourceDefinitions()

	calls := 0
	res, err := migrate.ApplyStep(t.Context(), c.CRDs, crd.Name, migrate.DryRunNone, func(cur *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		calls++
		if calls == 1 {
			theirs := cur.DeepCopy()
			theirs.Labels = map[string]string{"edited-by": "someone-else"}
			if _, err := crds.Update(t.Context(), theirs, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("concurrent edit: %v", err)
			}
		}
		return lifecycle.PlanPromote(cur, "v1", lifecycle.StageBlocked, lifecycle.PromoteOptions{})
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 || res.Replans != 1 {
		t.Fatalf("planned %d times, %d replans; want 2 and 1", calls, res.Replans)
	}
	got, err := crds.Get(t.Context(), crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["edited-by"] != "someone-else" {
		t.Errorf("the concurrent edit was lost: labels %v", got.Labels)
	}
	for _, v := range got.Spec.Versions {
		if v.Name == "v1beta1" && v.Served {
			t.Errorf("the step was lost: v1beta1 still served")
		}
	}
}

// Two "next step"s at once: the other client takes the step this one
// planned, and this one's re-plan would take the step after it. A re-plan
// goes no further than the step its user saw planned: it refuses, and the
// CRD is one step along, not two.
func TestApplyStepRefusesToGoFurtherThanPlanned(t *testing.T) {
	c, crd := deprecatedWidgets(t)
	crds := c.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	next := func(cur *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		return lifecycle.PlanPromote(cur, "v1", "", lifecycle.PromoteOptions{})
	}
	calls := 0
	_, err := migrate.ApplyStep(t.Context(), c.CRDs, crd.Name, migrate.DryRunNone, func(cur *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		calls++
		if calls == 1 {
			if _, err := migrate.ApplyStep(t.Context(), c.CRDs, crd.Name, migrate.DryRunNone, next); err != nil {
				t.Fatalf("the other client's step: %v", err)
			}
		}
		return next(cur)
	})
	if !errors.Is(err, migrate.ErrChangedMeanwhile) || !strings.Contains(err.Error(), "blocked of v1 was planned from deprecated, and is now blocked") {
		t.Fatalf("err = %v, want the step refused as changed meanwhile", err)
	}
	got, err := crds.Get(t.Context(), crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	blocked := false
	for _, v := range got.Spec.Versions {
		blocked = blocked || (v.Name == "v1beta1" && !v.Served)
	}
	if !blocked {
		t.Errorf("versions %+v: want v1beta1 still there, unserved (blocked), not removed", got.Spec.Versions)
	}
}

// A server dry run goes through validation and persists nothing.
func TestApplyStepServerDryRunPersistsNothing(t *testing.T) {
	c, created := deprecatedWidgets(t)
	crd := created
	res, err := migrate.ApplyStep(t.Context(), c.CRDs, crd.Name, migrate.DryRunServer, func(cur *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		return lifecycle.PlanPromote(cur, "v1", "", lifecycle.PromoteOptions{})
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.After.Spec.Versions[0].Served {
		t.Error("the dry run's answer does not show the change")
	}
	got, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != created.ResourceVersion {
		t.Errorf("server dry run changed the CRD: resourceVersion %s -> %s", created.ResourceVersion, got.ResourceVersion)
	}
}

// deprecatedWidgets starts a sandbox with a CRD whose v1beta1 is deprecated
// and v1 is storage.
func deprecatedWidgets(t *testing.T) (fixtures.Clients, *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	sb := sandbox.StartT(t, sandbox.Options{})
	c, err := fixtures.NewClients(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	crd := fixtures.CRD("example.com", "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1beta1", Served: true, Deprecated: true},
		fixtures.Version{Name: "v1", Served: true, Storage: true})
	created, err := c.CreateCRD(t.Context(), crd)
	if err != nil {
		t.Fatal(err)
	}
	return c, created
}
