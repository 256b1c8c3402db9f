package migrate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// ssaWidgets is one object, w, applied server-side by "tool" at v1 with
// spec.a and spec.b, then migrated to v2 (storage) and pruned: its
// managedFields entry stays at v1.
type ssaWidgets struct {
	t    *testing.T
	fx   fixtures.Clients
	meta metadata.Interface
	name string
}

func newSSAWidgets(t *testing.T) *ssaWidgets {
	sb := sandbox.StartT(t, sandbox.Options{})
	fx, err := fixtures.NewClients(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	crd := fixtures.CRD("example.com", "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1", Served: true, Storage: true},
		fixtures.Version{Name: "v2", Served: true})
	if _, err := fx.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	w := &ssaWidgets{t: t, fx: fx, name: crd.Name}
	if err := w.apply("v1", map[string]any{"a": "1", "b": "left out later"}, false); err != nil {
		t.Fatal(err)
	}
	if err := fx.SwitchStorage(t.Context(), crd.Name, "v2", true); err != nil {
		t.Fatal(err)
	}
	if w.meta, err = metadata.NewForConfig(sb.RestConfig()); err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	res, err := migration.Migrate(t.Context(), migration.Clients{Clients: cluster.Clients{CRDs: fx.CRDs, Dynamic: fx.Dynamic, Metadata: w.meta, Discovery: disc}}, crd.Name, opts())
	if err != nil || !res.Pruned {
		t.Fatalf("migrate: %+v %v", res, err)
	}
	return w
}

// apply applies w at version with spec as "tool", forced or not.
func (w *ssaWidgets) apply(version string, spec map[string]any, force bool, dryRun ...string) error {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: version, Resource: "widgets"}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/" + version, "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns"}, "spec": spec}}
	_, err := w.fx.Dynamic.Resource(gvr).Namespace("ns").Apply(w.t.Context(), "w", u, metav1.ApplyOptions{FieldManager: "tool", Force: force, DryRun: dryRun})
	return err
}

// v1 edits the CRD's v1: not served, or gone (nil).
func (w *ssaWidgets) v1(edit func(*apiextensionsv1.CustomResourceDefinitionVersion) bool) *apiextensionsv1.CustomResourceDefinition {
	crds := w.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	var out *apiextensionsv1.CustomResourceDefinition
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := crds.Get(w.t.Context(), w.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if keep := edit(&c.Spec.Versions[0]); !keep {
			c.Spec.Versions = c.Spec.Versions[1:]
		}
		out, err = crds.Update(w.t.Context(), c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}

// removeV1 removes v1 and, given seen, returns once seen says a dry-run
// apply at v2 met the API server without it (it swaps the CRD's handlers
// a moment after the update).
func (w *ssaWidgets) removeV1(seen func(error) bool) *apiextensionsv1.CustomResourceDefinition {
	crd := w.v1(func(*apiextensionsv1.CustomResourceDefinitionVersion) bool { return false })
	if seen == nil {
		return crd
	}
	err := wait.PollUntilContextTimeout(w.t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return seen(w.apply("v2", map[string]any{"a": "2"}, true, metav1.DryRunAll)), nil
	})
	if err != nil {
		w.t.Fatalf("the removal of v1 never took effect: %v", err)
	}
	return crd
}

func (w *ssaWidgets) get() *unstructured.Unstructured {
	got, err := w.fx.Dynamic.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}).Namespace("ns").Get(w.t.Context(), "w", metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return got
}

// Server-side apply fails on an object whose managedFields name a removed
// version (kubernetes#111937), and works once they are cleaned: dropped,
// since writers went unrecorded while the version was gone.
func TestCleanManagedFieldsMendsServerSideApply(t *testing.T) {
	w := newSSAWidgets(t)
	broken := func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "invalid group/version: example.com/v1")
	}
	current := w.removeV1(broken)
	if err := w.apply("v2", map[string]any{"a": "2"}, true); !broken(err) {
		t.Fatalf("apply before cleaning: %v, want the conversion error of kubernetes#111937", err)
	}
	cleaned := migration.CleanManagedFields(t.Context(), w.meta, current, migration.RestoreOptions{Concurrency: 2, PageSize: 10})
	if !cleaned.Complete() || cleaned.Rewritten != 1 {
		t.Fatalf("clean: %+v", cleaned)
	}
	// Nothing owns the fields once the entry is dropped: the owner's
	// first apply that changes one forces, once.
	if err := w.apply("v2", map[string]any{"a": "2"}, true); err != nil {
		t.Fatalf("apply after cleaning: %v", err)
	}
	got := w.get()
	if a, _, _ := unstructured.NestedString(got.Object, "spec", "a"); a != "2" {
		t.Errorf("spec.a = %q after apply, want 2", a)
	}
	for _, mf := range got.GetManagedFields() {
		if mf.APIVersion == "example.com/v1" {
			t.Errorf("entry of the removed version left: %+v", mf)
		}
	}
	// A second pass finds nothing to clean.
	if again := migration.CleanManagedFields(t.Context(), w.meta, current, migration.RestoreOptions{Concurrency: 2, PageSize: 10}); again.Rewritten != 0 || again.Unchanged != 1 {
		t.Errorf("second pass: %+v", again)
	}
}

// Cleaned in the plugin's order, while v1 is listed but no longer served
// (the API server still records every writer then), the entry moves to
// the storage version: after the removal the owner's apply goes through
// unforced, and a field it leaves out is removed, as it owns it still.
func TestCleanManagedFieldsBeforeTheRemovalKeepsTheOwner(t *testing.T) {
	w := newSSAWidgets(t)
	unserved := w.v1(func(v *apiextensionsv1.CustomResourceDefinitionVersion) bool { v.Served = false; return true })
	if cleaned := migration.CleanManagedFields(t.Context(), w.meta, unserved, migration.RestoreOptions{Concurrency: 2}); !cleaned.Complete() || cleaned.Rewritten != 1 {
		t.Fatalf("clean: %+v", cleaned)
	}
	// Whether or not the server has swapped its handlers yet, the apply
	// must go through and remove spec.b.
	w.removeV1(nil)
	if err := w.apply("v2", map[string]any{"a": "2"}, false); err != nil {
		t.Fatalf("the owner's unforced apply after the removal: %v", err)
	}
	got := w.get()
	if b, found, _ := unstructured.NestedString(got.Object, "spec", "b"); found {
		t.Errorf("spec.b = %q after the owner's apply left it out: the cleanup took the owner's fields away", b)
	}
	for _, mf := range got.GetManagedFields() {
		if mf.Manager != "tool" || mf.APIVersion != "example.com/v2" {
			t.Errorf("an entry not the owner's at v2: %s %s %s", mf.Manager, mf.Operation, mf.APIVersion)
		}
	}
}
