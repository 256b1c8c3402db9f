package migrate_test

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// Someone edits the CRD between the step's read and its write: the write
// conflicts, the step is re-planned on their edit, and both survive.
func TestPromoteReplansOnConcurrentEdit(t *testing.T) {
	sb, c, crd := deprecatedWidgets(t)
	crds := c.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	edited := editingBeforeFirstStepWrite(t, sb.RestConfig(), func() {
		theirs, err := crds.Get(t.Context(), crd.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("concurrent edit: %v", err)
			return
		}
		theirs.Labels = map[string]string{"edited-by": "someone-else"}
		if _, err := crds.Update(t.Context(), theirs, metav1.UpdateOptions{}); err != nil {
			t.Errorf("concurrent edit: %v", err)
		}
	})
	res, err := migration.Promote(t.Context(), edited, crd.Name, migration.PromoteOptions{Version: "v1", To: lifecycle.StageBlocked, DespiteClients: sharedMetric})
	if err != nil {
		t.Fatal(err)
	}
	if res.Replans != 1 {
		t.Fatalf("%d replans; want 1", res.Replans)
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
func TestPromoteRefusesToGoFurtherThanPlanned(t *testing.T) {
	sb, c, crd := deprecatedWidgets(t)
	other, err := migration.NewClients(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	edited := editingBeforeFirstStepWrite(t, sb.RestConfig(), func() {
		if _, err := migration.Promote(t.Context(), other, crd.Name, migration.PromoteOptions{Version: "v1", DespiteClients: sharedMetric}); err != nil {
			t.Errorf("the other client's step: %v", err)
		}
	})
	_, err = migration.Promote(t.Context(), edited, crd.Name, migration.PromoteOptions{Version: "v1", DespiteClients: sharedMetric})
	if !errors.Is(err, migration.ErrChangedMeanwhile) || !strings.Contains(err.Error(), "blocked of v1 was planned from deprecated, and is now blocked") {
		t.Fatalf("err = %v, want the step refused as changed meanwhile", err)
	}
	got, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), crd.Name, metav1.GetOptions{})
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
func TestPromoteServerDryRunPersistsNothing(t *testing.T) {
	sb, c, created := deprecatedWidgets(t)
	mc, err := migration.NewClients(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	res, err := migration.Promote(t.Context(), mc, created.Name, migration.PromoteOptions{Version: "v1", DryRun: migration.DryRunServer, DespiteClients: sharedMetric})
	if err != nil {
		t.Fatal(err)
	}
	if res.After.Spec.Versions[0].Served {
		t.Error("the dry run's answer does not show the change")
	}
	got, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), created.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != created.ResourceVersion {
		t.Errorf("server dry run changed the CRD: resourceVersion %s -> %s", created.ResourceVersion, got.ResourceVersion)
	}
}

// editingBeforeFirstStepWrite gives the plugin's clients whose first write
// of a CRD's spec (the step's update) waits until edit, another client's
// write, is done: the moment between the step's read and its write, made
// certain.
func editingBeforeFirstStepWrite(t *testing.T, cfg *rest.Config, edit func()) migration.Clients {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	var once sync.Once
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/customresourcedefinitions/") && !strings.HasSuffix(req.URL.Path, "/status") {
				once.Do(edit)
			}
			return rt.RoundTrip(req)
		})
	})
	c, err := migration.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// deprecatedWidgets starts a sandbox with a CRD whose v1beta1 is deprecated
// and v1 is storage.
func deprecatedWidgets(t *testing.T) (*sandbox.Sandbox, fixtures.Clients, *apiextensionsv1.CustomResourceDefinition) {
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
	return sb, c, created
}
