package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// usage names who still uses a deprecated version: a client that reads it
// shows in the API server's metric, one that writes it in managedFields;
// a client of the new version shows in neither.
func TestUsageShowsWhoStillCallsADeprecatedVersion(t *testing.T) {
	e := newEnv(t, shared)
	ctx := t.Context()
	group := "usage.test"
	crd, gvr := e.deprecatedWidgets(group)
	var objs []fixtures.Object
	for i := range 5 {
		objs = append(objs, fixtures.Object{Namespace: "usage-a", Name: fmt.Sprintf("w-%d", i), Spec: map[string]any{"size": int64(i)}})
	}
	if err := e.clients.CreateObjects(ctx, gvr("v1"), "Widget", objs); err != nil {
		t.Fatal(err)
	}

	// Clients of v1 only: nothing to see.
	r := mustCode(t, e.plugin("usage", crd.Name), 0)
	contains(t, "usage before any v1beta1 client", r.Stdout, "v1beta1")
	if line := versionLine(r.Stdout, "v1beta1"); !containsAll(line, " no ", "none") {
		t.Errorf("v1beta1 shows use before any client used it: %q\n%s", line, r.Stdout)
	}

	// A client reads v1beta1: the API server's metric shows it.
	if _, err := e.clients.Dynamic.Resource(gvr("v1beta1")).Namespace("usage-a").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	r = mustCode(t, e.plugin("usage", crd.Name), 3)
	if line := versionLine(r.Stdout, "v1beta1"); !containsAll(line, "yes") {
		t.Errorf("a read of v1beta1 does not show: %q\n%s", line, r.Stdout)
	}

	// An operator writes at v1beta1: managedFields names it.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1beta1", "kind": "Widget",
		"metadata": map[string]any{"name": "w-0", "namespace": "usage-a"},
		"spec":     map[string]any{"size": int64(42)},
	}}
	got, err := e.clients.Dynamic.Resource(gvr("v1beta1")).Namespace("usage-a").Get(ctx, "w-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.SetResourceVersion(got.GetResourceVersion())
	if _, err := e.clients.Dynamic.Resource(gvr("v1beta1")).Namespace("usage-a").Update(ctx, u, metav1.UpdateOptions{FieldManager: "legacy-operator"}); err != nil {
		t.Fatal(err)
	}
	r = mustCode(t, e.plugin("usage", crd.Name), 3)
	if line := versionLine(r.Stdout, "v1beta1"); !containsAll(line, "legacy-operator (Update) on 1 object") {
		t.Errorf("the writer of v1beta1 does not show: %q\n%s", line, r.Stdout)
	}
	if line := versionLine(r.Stdout, "v1 "); containsAll(line, "legacy-operator") {
		t.Errorf("the writer of v1beta1 shows at v1: %q", line)
	}
}

// check names the readers of a version the upgrade stops serving from the
// deprecated-API metric, which only a read at that version sets: check's
// own reads (objects validated at v1beta1, conversion None) do not.
func TestCheckNamesReadersOfAVersionTheUpgradeStopsServing(t *testing.T) {
	e := newEnv(t, shared)
	ctx := t.Context()
	group := "checkreaders.test"
	crd, gvr := e.deprecatedWidgets(group)
	if err := e.clients.CreateObjects(ctx, gvr("v1"), "Widget", []fixtures.Object{{Namespace: "checkreaders", Name: "w-0", Spec: map[string]any{"size": int64(1)}}}); err != nil {
		t.Fatal(err)
	}
	same := e.manifestOf(crd.Name)
	unserved := e.manifestWith(crd.Name, func(c *apiextensionsv1.CustomResourceDefinition) {
		c.Spec.Versions[0].Served = false
	})

	// check validates the object against v1beta1, still served: that read
	// must not count as a request to v1beta1.
	mustCode(t, e.plugin("check", "-f", same), 0)
	r := mustCode(t, e.plugin("check", "-f", unserved), 0)
	if strings.Contains(r.Stdout, "requestedOnVersion") {
		t.Errorf("check's own read of v1beta1 shows as a request:\n%s", r.Stdout)
	}

	// A client reads v1beta1: the upgrade that stops serving it says so.
	if _, err := e.clients.Dynamic.Resource(gvr("v1beta1")).Namespace("checkreaders").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	r = mustCode(t, e.plugin("check", "-f", unserved), 0)
	contains(t, "check after a read of v1beta1", r.Stdout, "requestedOnVersion",
		"the API server's deprecated-API metric counts requests to v1beta1 (the resource)", "move them to v1 before applying")
	r = mustCode(t, e.plugin("check", "-f", unserved, "--strict"), 3)
	contains(t, "check --strict", r.Stdout, "requestedOnVersion")
}

// deprecatedWidgets creates widgets.<group> with v1beta1 served and
// deprecated beside v1, the storage version: the deprecated-API metric
// counts requests to v1beta1.
func (e *env) deprecatedWidgets(group string) (*apiextensionsv1.CustomResourceDefinition, func(string) schema.GroupVersionResource) {
	e.t.Helper()
	crd := fixtures.CRD(group, "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1beta1", Served: true, Deprecated: true},
		fixtures.Version{Name: "v1", Served: true, Storage: true})
	if _, err := e.clients.CreateCRD(e.t.Context(), crd); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
	})
	return crd, func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: v, Resource: "widgets"}
	}
}

// versionLine is the table row of version v.
func versionLine(out, v string) string {
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, v) {
			return line
		}
	}
	return ""
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
