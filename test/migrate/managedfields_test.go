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

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// Server-side apply fails on an object whose managedFields name a removed
// version (kubernetes#111937), and works once they are cleaned. The owner
// keeps its fields through the cleanup: its next apply, which leaves a
// field out, removes it, and nothing else owns one.
func TestCleanManagedFieldsMendsServerSideApply(t *testing.T) {
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
	applySpec := func(version, manager string, spec map[string]any, dryRun ...string) error {
		gvr := schema.GroupVersionResource{Group: "example.com", Version: version, Resource: "widgets"}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/" + version, "kind": "Widget",
			"metadata": map[string]any{"name": "w", "namespace": "ns"}, "spec": spec}}
		_, err := fx.Dynamic.Resource(gvr).Namespace("ns").Apply(t.Context(), "w", u, metav1.ApplyOptions{FieldManager: manager, Force: true, DryRun: dryRun})
		return err
	}
	applyOpts := func(version, manager string, val string, dryRun ...string) error {
		return applySpec(version, manager, map[string]any{"a": val}, dryRun...)
	}
	apply := func(version, manager string, val string) error { return applyOpts(version, manager, val) }
	if err := applySpec("v1", "tool", map[string]any{"a": "1", "b": "dropped by the owner later"}); err != nil {
		t.Fatal(err)
	}
	if err := fx.SwitchStorage(t.Context(), crd.Name, "v2", true); err != nil {
		t.Fatal(err)
	}
	// migrate.Migrate as the plugin does, then remove v1.
	v2 := schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "widgets"}
	meta, err := metadata.NewForConfig(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	res, err := migrate.Migrate(t.Context(), cluster.Clients{CRDs: fx.CRDs, Dynamic: fx.Dynamic, Metadata: meta, Discovery: disc}, crd.Name, opts())
	if err != nil || !res.Pruned {
		t.Fatalf("migrate: %+v %v", res, err)
	}
	crds := fx.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := crds.Get(t.Context(), crd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.Spec.Versions = c.Spec.Versions[1:]
		_, err = crds.Update(t.Context(), c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// The removal takes effect once the API server has swapped the CRD's
	// handlers; a dry-run apply (which changes nothing) tells when.
	broken := func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "invalid group/version: example.com/v1")
	}
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return broken(applyOpts("v2", "tool", "2", metav1.DryRunAll)), nil
	})
	if err != nil {
		t.Fatalf("server-side apply never failed on the stale entry: %v", err)
	}
	if err := apply("v2", "tool", "2"); !broken(err) {
		t.Fatalf("apply before cleaning: %v, want the conversion error of kubernetes#111937", err)
	}
	current, err := crds.Get(t.Context(), crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cleaned := migrate.CleanManagedFields(t.Context(), meta, current, migrate.RestoreOptions{Concurrency: 2, PageSize: 10})
	if !cleaned.Complete() || cleaned.Rewritten != 1 {
		t.Fatalf("clean: %+v", cleaned)
	}
	if err := apply("v2", "tool", "2"); err != nil {
		t.Fatalf("apply after cleaning: %v", err)
	}
	got, err := fx.Dynamic.Resource(v2).Namespace("ns").Get(t.Context(), "w", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a, _, _ := unstructured.NestedString(got.Object, "spec", "a"); a != "2" {
		t.Errorf("spec.a = %q after apply, want 2", a)
	}
	if b, found, _ := unstructured.NestedString(got.Object, "spec", "b"); found {
		t.Errorf("spec.b = %q after the owner's apply left it out: the cleanup took the owner's fields away", b)
	}
	for _, mf := range got.GetManagedFields() {
		if mf.APIVersion == "example.com/v1" || mf.Manager != "tool" {
			t.Errorf("after the owner's apply, an entry not the owner's at v2: %s %s %s", mf.Manager, mf.Operation, mf.APIVersion)
		}
	}
	// A second pass finds nothing to clean.
	if again := migrate.CleanManagedFields(t.Context(), meta, current, migrate.RestoreOptions{Concurrency: 2, PageSize: 10}); again.Rewritten != 0 || again.Unchanged != 1 {
		t.Errorf("second pass: %+v", again)
	}
}
