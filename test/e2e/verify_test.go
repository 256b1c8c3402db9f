package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/convwebhook"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

const endpoints = "endpoints.net.example.com"

// installEndpoints installs the docs' conversion example: v1 (storage) has
// spec.hostPort, v2 has spec.host and spec.port, converted by a real HTTPS
// webhook; n objects are created at v1.
func installEndpoints(t *testing.T, e *env, n int) *convwebhook.Webhook {
	t.Helper()
	wh, err := convwebhook.Start(convwebhook.Correct)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wh.Stop() })
	crd := fixtures.CRD("net.example.com", "Endpoint", "endpoints", apiextensionsv1.NamespaceScoped, true,
		fixtures.Version{Name: "v1", Served: true, Storage: true},
		fixtures.Version{Name: "v2", Served: true})
	crd.Spec.Conversion = wh.Conversion()
	if _, err := e.clients.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	objs := make([]fixtures.Object, n)
	for i := range objs {
		objs[i] = fixtures.Object{Namespace: "default", Name: fmt.Sprintf("ep-%02d", i), Spec: map[string]any{"hostPort": fmt.Sprintf("host-%d:%d", i, 8000+i)}}
	}
	gvr := schema.GroupVersionResource{Group: "net.example.com", Version: "v1", Resource: "endpoints"}
	if err := e.clients.CreateObjects(t.Context(), gvr, "Endpoint", objs); err != nil {
		t.Fatal(err)
	}
	return wh
}

func TestVerifyThroughConversionWebhook(t *testing.T) {
	e := newEnv(t, 0)
	const n = 12
	wh := installEndpoints(t, e, n)

	r := e.plugin("verify", "endpoints").mustCode(t, 0)
	contains(t, "verify with a correct webhook", r.stdout, fmt.Sprintf("endpoints.net.example.com: v1 (the storage version: no conversion), v2→v1→v2: %d objects without loss", n),
		"v1→v2→v1: not checked while v1 is the storage version")
	if wh.Reviews() == 0 {
		t.Fatal("the webhook was never called: the check did not go through conversion")
	}

	// A converter that drops the port on the way back to v1 loses it on
	// every object, and verify finds each one, field by field.
	wh.SetMode(convwebhook.Lossy)
	r = e.plugin("verify", "endpoints", "v2", "-o", "json").mustCode(t, 3)
	var doc report.VerifyReport
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r.stdout)
	}
	if doc.Passed || len(doc.Losses) != n {
		t.Fatalf("lossy webhook: passed=%v losses=%d, want %d losses", doc.Passed, len(doc.Losses), n)
	}
	for _, l := range doc.Losses {
		if len(l.Diffs) != 1 || l.Diffs[0].Path != "spec.port" || l.Diffs[0].After != `""` {
			t.Errorf("%s: diffs %+v, want spec.port lost", l.Name, l.Diffs)
		}
	}
	table := e.plugin("verify", "endpoints").mustCode(t, 3)
	contains(t, "verify table", table.stdout, "lose data or fail", "default/ep-00   v2        spec.port   \"8000\"")

	// Bridging is refused while the round trip loses data, and allowed once
	// the converter is fixed.
	before := e.crdVersions()
	refused := e.plugin("promote", "endpoints", "v2")
	if refused.code != 1 || !contains1(refused.stderr, "error: v2 cannot be bridged") {
		t.Fatalf("promote to bridge with a lossy webhook: exit %d\n%s\n%s", refused.code, refused.stdout, refused.stderr)
	}
	sameCRDs(t, before, e.crdVersions())
	wh.SetMode(convwebhook.Correct)
	e.plugin("promote", "endpoints", "v2").mustCode(t, 0)
	if rec, ok := stages.VerificationFor(e.crd(endpoints), "v2"); !ok || rec.Objects != n {
		t.Fatalf("bridge record %+v, %v", rec, ok)
	}
}

// A webhook that does not carry spec.legacy into v2 passes the bridge
// check (v2→v1→v2: objects read at v2 never have it) but would destroy it
// when migrate re-stores the objects stored at v1. promote --to deprecated
// switches, checks v1→v2→v1 on every object, and switches back, showing
// the loss field by field; nothing is lost.
func TestPromoteDeprecatedSwitchesBackWhenOldToNewLoses(t *testing.T) {
	e := newEnv(t, 0)
	const n = 6
	wh := installEndpoints(t, e, n)
	gvr := schema.GroupVersionResource{Group: "net.example.com", Version: "v1", Resource: "endpoints"}
	giveLegacy(t, e, gvr, "ep-01", "ep-04")
	wh.SetMode(convwebhook.DropsLegacy)
	e.plugin("promote", "endpoints", "v2").mustCode(t, 0) // bridge: v2→v1→v2 sees nothing

	r := e.plugin("promote", "endpoints", "v2")
	if r.code != 1 || !contains1(r.stderr, "error: v1 was not deprecated: re-storing the objects stored at v1 at v2 would lose data") {
		t.Fatalf("promote to deprecated with a webhook lossy on v1→v2→v1: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	contains(t, "the losses", r.stdout, "v1→v2→v1 loses data on 2 of 6 objects", "default/ep-01", "default/ep-04", "spec.legacy", "switched back")
	crd := e.crd(endpoints)
	if stages.StorageVersion(crd) != "v1" || specVersion(crd, "v1").Deprecated {
		t.Fatalf("after the switch back: storage %s, versions %+v", stages.StorageVersion(crd), crd.Spec.Versions)
	}
	c, err := e.sb.StoredAPIVersions(t.Context(), "net.example.com", "endpoints")
	if err != nil || len(c) != 1 || c["net.example.com/v1"] != n {
		t.Fatalf("etcd after the switch back: %v %v", c, err)
	}
	o, err := e.clients.Dynamic.Resource(gvr).Namespace("default").Get(t.Context(), "ep-04", metav1.GetOptions{})
	if err != nil || o.Object["spec"].(map[string]any)["legacy"] != "keep" {
		t.Fatalf("ep-04 after the switch back: %v %v", o, err)
	}
}

// promote --to bridge takes the check a passed verify recorded, while
// neither the CRD nor any object changed since; after a write to one
// object it checks every object again.
func TestPromoteBridgeTakesARecordedVerify(t *testing.T) {
	const n = 12
	for _, tc := range []struct {
		name  string
		write bool
	}{{"nothing changed", false}, {"an object written since", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 0)
			installEndpoints(t, e, n)
			e.plugin("verify", "endpoints", "v2").mustCode(t, 0)
			if _, ok := stages.CheckFor(e.crd(endpoints), "v2"); !ok {
				t.Fatalf("verify recorded no check: %v", e.crd(endpoints).Annotations)
			}
			if _, ok := stages.VerificationFor(e.crd(endpoints), "v2"); ok {
				t.Fatal("verify bridged v2: only promote may")
			}
			if tc.write {
				gvr := schema.GroupVersionResource{Group: "net.example.com", Version: "v1", Resource: "endpoints"}
				if _, err := e.clients.Dynamic.Resource(gvr).Namespace("default").Patch(t.Context(), "ep-03", types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			r := e.plugin("promote", "endpoints", "v2").mustCode(t, 0)
			taken := contains1(r.stderr, "the round-trip check verify recorded")
			if taken == tc.write {
				t.Errorf("record taken: %v, want %v\nstderr:\n%s", taken, !tc.write, r.stderr)
			}
			if rec, ok := stages.VerificationFor(e.crd(endpoints), "v2"); !ok || rec.Objects != n {
				t.Fatalf("bridge record %+v, %v", rec, ok)
			}
		})
	}
}

// The webhook is redeployed between promote's switch check and migrate,
// behind the same configuration: migrate checks each object through the
// webhook as it is now, leaves the two that would lose spec.legacy as they
// are, names them, prunes nothing and exits 3; --accept-loss goes ahead.
func TestMigrateChecksEachObjectThroughTheWebhookAsItIsNow(t *testing.T) {
	e := newEnv(t, 0)
	const n = 6
	wh := installEndpoints(t, e, n)
	gvr := schema.GroupVersionResource{Group: "net.example.com", Version: "v1", Resource: "endpoints"}
	giveLegacy(t, e, gvr, "ep-01", "ep-04")
	e.plugin("promote", "endpoints", "v2").mustCode(t, 0) // bridge
	e.plugin("promote", "endpoints", "v2").mustCode(t, 0) // deprecated: the check passes
	wh.SetMode(convwebhook.DropsLegacy)

	r := e.plugin("migrate", "endpoints", "--switch-grace=1s", "-q").mustCode(t, 3)
	contains(t, "migrate through the redeployed webhook", r.stdout, "v1→v2→v1 loses data on 2 of 6 objects", "default/ep-01", "default/ep-04", "spec.legacy",
		"4 re-stored", "2 left as they are", "not pruned")
	c, err := e.sb.StoredAPIVersions(t.Context(), "net.example.com", "endpoints")
	if err != nil || c["net.example.com/v1"] != 2 || c["net.example.com/v2"] != n-2 {
		t.Fatalf("etcd: %v %v: want the two objects holding spec.legacy left at v1", c, err)
	}
	o, err := e.clients.Dynamic.Resource(gvr).Namespace("default").Get(t.Context(), "ep-04", metav1.GetOptions{})
	if err != nil || o.Object["spec"].(map[string]any)["legacy"] != "keep" {
		t.Fatalf("ep-04: %v %v", o, err)
	}
	// status leads on from here, not to the same migrate again: it names
	// the objects, the field, and the ways forward.
	st := e.plugin("status", "endpoints").mustCode(t, 0)
	contains(t, "status after the refused migrate", st.stdout, "the last migrate left 2 objects stored at v1", "spec.legacy", "default/ep-01, default/ep-04",
		"edit those fields out of them", "kubectl crdversion migrate endpoints.net.example.com --accept-loss")
	r = e.plugin("migrate", "endpoints", "--switch-grace=1s", "--accept-loss", "-q").mustCode(t, 0)
	contains(t, "--accept-loss", r.stdout, "not checked: loss accepted", "(pruned)")
	if _, ok := e.crd(endpoints).Annotations[stages.RefusedAnnotation]; ok {
		t.Error("the note of the objects left stayed after a migrate that left none")
	}
	if st := e.plugin("status", "endpoints").mustCode(t, 0); strings.Contains(st.stdout, "--accept-loss") {
		t.Errorf("status after the migration still advises --accept-loss:\n%s", st.stdout)
	}
}

// giveLegacy sets spec.legacy, a field the DropsLegacy webhook does not
// carry, on the named endpoints.
func giveLegacy(t *testing.T, e *env, gvr schema.GroupVersionResource, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := e.clients.Dynamic.Resource(gvr).Namespace("default").Patch(t.Context(), name, types.MergePatchType, []byte(`{"spec":{"legacy":"keep"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
