package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
)

// The deprecated-API metric names no client, and verify's check of a
// deprecated version reads it (v1beta1→v1→v1beta1 on every object): usage
// on the machine that ran verify says the requests were the plugin's own
// and exits 0; on another machine, which has no record of them, and after
// a real client's request, it exits 3.
func TestUsageTellsThePluginsOwnRequestsFromAClients(t *testing.T) {
	e := newEnv(t, 0)
	// A group of its own: the in-process API servers of this test binary
	// share one metrics registry.
	const group = "ownrequests.example.com"
	crd := fixtures.CRD(group, "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1beta1", Served: true, Deprecated: true},
		fixtures.Version{Name: "v1", Served: true, Storage: true})
	if _, err := e.clients.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	objs := make([]fixtures.Object, 5)
	for i := range objs {
		objs[i] = fixtures.Object{Namespace: "default", Name: fmt.Sprintf("w-%d", i), Spec: map[string]any{"size": int64(i)}}
	}
	if err := e.clients.CreateObjects(t.Context(), schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}, "Widget", objs); err != nil {
		t.Fatal(err)
	}

	// One machine: its HOME, and so kubectl's cache, is kept between runs.
	home := t.TempDir()
	onThisMachine := func(args ...string) result {
		t.Helper()
		r, err := plugintest.Kubectl(t.Context(), e.sb.KubeconfigPath(), home, "", args...)
		if err != nil {
			t.Fatal(err)
		}
		return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
	}
	usageDoc := func(r result) report.VersionUsage {
		t.Helper()
		var doc report.UsageReport
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("usage -o json: %v\n%s", err, r.stdout)
		}
		for _, v := range doc.Items[0].Versions {
			if v.Name == "v1beta1" {
				return v
			}
		}
		t.Fatalf("no v1beta1 in %s", r.stdout)
		return report.VersionUsage{}
	}

	onThisMachine("crdversion", "usage", crd.Name).mustCode(t, 0)
	onThisMachine("crdversion", "verify", crd.Name).mustCode(t, 0)

	r := onThisMachine("crdversion", "usage", crd.Name).mustCode(t, 0)
	contains(t, "usage after verify", r.stdout, "yes (widgets): only this plugin's own verify",
		"note: every request to v1beta1 while deprecated was this plugin's own (verify, ")
	v := usageDoc(onThisMachine("crdversion", "usage", crd.Name, "-o", "json").mustCode(t, 0))
	if v.Requested != report.RequestedYes || v.OwnRequests == nil || v.OwnRequests.Requests < 5 || v.OwnRequests.RequestsSince != 0 || v.Attention {
		t.Fatalf("usage -o json after verify: %+v %+v", v, v.OwnRequests)
	}
	t.Logf("verify of 5 objects sent %d requests to v1beta1", v.OwnRequests.Requests)

	// Another machine has no record: the metric's yes is anyone's.
	r = e.plugin("usage", crd.Name).mustCode(t, 3)
	contains(t, "usage on another machine", r.stdout, "attention: v1beta1 is deprecated and still used: requested since the API server started")

	// A real client reads v1beta1.
	e.kubectl("get", "widgets.v1beta1."+group, "-A").mustCode(t, 0)
	r = onThisMachine("crdversion", "usage", crd.Name).mustCode(t, 3)
	contains(t, "usage after a client's read", r.stdout, "since this plugin's own verify",
		"attention: v1beta1 is deprecated and still used: requested by another client than this plugin")
	v = usageDoc(onThisMachine("crdversion", "usage", crd.Name, "-o", "json").mustCode(t, 3))
	if v.OwnRequests == nil || v.OwnRequests.RequestsSince < 1 || !v.Attention {
		t.Fatalf("usage -o json after a client's read: %+v %+v", v, v.OwnRequests)
	}

	// The plugin's next verify cannot take the client's request as its own.
	onThisMachine("crdversion", "verify", crd.Name).mustCode(t, 0)
	onThisMachine("crdversion", "usage", crd.Name).mustCode(t, 3)
}

// promote --to deprecated deprecates v1beta1 and then checks every object
// at it (v1's schema does not keep every field v1beta1's allows, so the
// schemas prove nothing), and migrate checks each again before its
// re-store: usage on that machine says those requests were the plugin's
// own, and a client's read after them makes it exit 3.
func TestUsageAfterPromoteAndMigrate(t *testing.T) {
	e := newEnv(t, 0)
	const group = "ownsteps.example.com"
	crd := fixtures.CRD(group, "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1beta1", Served: true, Storage: true},
		fixtures.Version{Name: "v1", Served: true})
	crd.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{
		Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}}
	if _, err := e.clients.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	objs := make([]fixtures.Object, 5)
	for i := range objs {
		objs[i] = fixtures.Object{Namespace: "default", Name: fmt.Sprintf("w-%d", i), Spec: map[string]any{"size": int64(i)}}
	}
	// Written at v1 (managedFields name no client of v1beta1), stored at
	// v1beta1.
	if err := e.clients.CreateObjects(t.Context(), schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}, "Widget", objs); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	onThisMachine := func(args ...string) result {
		t.Helper()
		r, err := plugintest.Kubectl(t.Context(), e.sb.KubeconfigPath(), home, "", append([]string{"crdversion"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
	}

	onThisMachine("promote", crd.Name, "v1", "--to", "bridge").mustCode(t, 0)
	r := onThisMachine("promote", crd.Name, "v1").mustCode(t, 0)
	contains(t, "promote to deprecated", r.stdout, "bridge → deprecated")
	if strings.Contains(r.stdout+r.stderr, "proven by the schemas") {
		t.Fatalf("the schemas prove the step, so nothing reads v1beta1:\n%s%s", r.stdout, r.stderr)
	}
	r = onThisMachine("usage", crd.Name).mustCode(t, 0)
	contains(t, "usage after promote", r.stdout, "yes (widgets): only this plugin's own promote")

	onThisMachine("migrate", crd.Name, "--switch-grace=0").mustCode(t, 0)
	r = onThisMachine("usage", crd.Name).mustCode(t, 0)
	contains(t, "usage after promote and migrate", r.stdout, "yes (widgets): only this plugin's own promote, migrate")

	e.kubectl("get", "widgets.v1beta1."+group, "-n", "default", "w-0").mustCode(t, 0)
	r = onThisMachine("usage", crd.Name).mustCode(t, 3)
	contains(t, "usage after a client's read", r.stdout, "1 request since this plugin's own promote, migrate")
}
