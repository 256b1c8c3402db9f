package e2e

import (
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// Three old versions, one of them removed already: v1 is storage and has
// always been (storedVersions [v1]), v1alpha2 and v1alpha1 are served.
// promote --to deprecated deprecates both; rollback undoes that and only
// that: v1 stays the storage version, and a write at v1alpha2 afterwards is
// stored at v1 in etcd.
func TestRollbackOfADeprecationNeverSwitchesStorage(t *testing.T) {
	e := newEnv(t, 0)
	crd := fixtures.CRD("rb.example.com", "Relic", "relics", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1", Served: true, Storage: true},
		fixtures.Version{Name: "v1alpha2", Served: true},
		fixtures.Version{Name: "v1alpha1", Served: true})
	if _, err := e.clients.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	at := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "rb.example.com", Version: v, Resource: "relics"}
	}
	if err := e.clients.CreateObjects(t.Context(), at("v1"), "Relic", []fixtures.Object{{Namespace: "default", Name: "r-0", Spec: map[string]any{"a": "x"}}}); err != nil {
		t.Fatal(err)
	}

	contains(t, "status before", e.plugin("status", "relics").stdout, "kubectl crdversion promote relics.rb.example.com v1 --to deprecated")
	r := e.plugin("promote", "relics", "v1", "--to", "deprecated").mustCode(t, 0)
	contains(t, "promote to deprecated", r.stdout, "v1 served → deprecated", "v1alpha2", "v1alpha1")
	after := e.crd(crd.Name)
	for _, v := range []string{"v1alpha2", "v1alpha1"} {
		if !specVersion(after, v).Deprecated {
			t.Errorf("after promote --to deprecated, %s = %+v: every served older version is deprecated", v, specVersion(after, v))
		}
	}
	contains(t, "status after", e.plugin("status", "relics").stdout, "kubectl crdversion promote relics.rb.example.com v1 --to blocked")

	r = e.plugin("rollback", "relics").mustCode(t, 0)
	contains(t, "rollback", r.stdout, "v1 deprecated → served", "v1 stays the storage version")
	after = e.crd(crd.Name)
	if stages.StorageVersion(after) != "v1" || specVersion(after, "v1alpha2").Deprecated || specVersion(after, "v1alpha1").Deprecated {
		t.Fatalf("after rollback: %+v", after.Spec.Versions)
	}
	if err := e.clients.CreateObjects(t.Context(), at("v1alpha2"), "Relic", []fixtures.Object{{Namespace: "default", Name: "r-1", Spec: map[string]any{"a": "y"}}}); err != nil {
		t.Fatal(err)
	}
	c, err := e.sb.StoredAPIVersions(t.Context(), "rb.example.com", "relics")
	if err != nil || len(c) != 1 || c["rb.example.com/v1"] != 2 {
		t.Fatalf("etcd after the rollback and a write at v1alpha2: %v %v (want both objects at v1)", c, err)
	}
}

// gizmos: v1 adds spec.extra, which v1beta1 has not (conversion None, so
// storing at v1beta1 prunes it).
func installGizmos(t *testing.T, e *env) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	spec := func(fields ...string) *apiextensionsv1.CustomResourceValidation {
		props := map[string]apiextensionsv1.JSONSchemaProps{}
		for _, f := range fields {
			props[f] = str
		}
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: props}}}}
	}
	crd := fixtures.CRD("rb.example.com", "Gizmo", "gizmos", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1", Served: true},
		fixtures.Version{Name: "v1beta1", Served: true, Storage: true})
	crd.Spec.Versions[0].Schema, crd.Spec.Versions[1].Schema = spec("a", "extra"), spec("a")
	if _, err := e.clients.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	objs := make([]fixtures.Object, 3)
	for i := range objs {
		objs[i] = fixtures.Object{Namespace: "default", Name: fmt.Sprintf("g-%d", i), Spec: map[string]any{"a": "x"}}
	}
	if err := e.clients.CreateObjects(t.Context(), schema.GroupVersionResource{Group: "rb.example.com", Version: "v1beta1", Resource: "gizmos"}, "Gizmo", objs); err != nil {
		t.Fatal(err)
	}
	return crd
}

// Switching storage back is a switch like the one forward: an object
// written at v1 with spec.extra after bridge → deprecated would lose it
// once stored at v1beta1. rollback switches, checks v1→v1beta1→v1 on every
// object, finds the loss and switches back: v1 stays storage, the object
// keeps spec.extra in etcd, and the bridge record of v1 is dropped.
func TestRollbackSwitchIsCheckedAndUndoneOnLoss(t *testing.T) {
	e := newEnv(t, 0)
	crd := installGizmos(t, e)
	e.plugin("promote", "gizmos", "v1").mustCode(t, 0) // bridge
	e.plugin("promote", "gizmos", "v1").mustCode(t, 0) // deprecated: the storage switch
	v1 := schema.GroupVersionResource{Group: "rb.example.com", Version: "v1", Resource: "gizmos"}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "rb.example.com/v1", "kind": "Gizmo",
		"metadata": map[string]any{"name": "g-new", "namespace": "default"}, "spec": map[string]any{"a": "x", "extra": "keep"}}}
	if _, err := e.clients.Dynamic.Resource(v1).Namespace("default").Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	r := e.plugin("rollback", "gizmos")
	if r.code != 3 || !contains1(r.stderr, "error: v1beta1 did not become the storage version again: storing at v1beta1 would lose the fields named above") ||
		!contains1(r.stderr, "accept the loss by name (kubectl crdversion rollback gizmos.rb.example.com v1 --accept-loss)") {
		t.Fatalf("rollback with an object v1beta1 cannot hold: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	contains(t, "the loss", r.stdout, "v1 deprecated → bridge", "v1→v1beta1→v1 loses data on 1 of 4 objects", "default/g-new", "spec.extra", "switched back")
	after := e.crd(crd.Name)
	if stages.StorageVersion(after) != "v1" || !specVersion(after, "v1beta1").Deprecated {
		t.Fatalf("after the undone rollback: %+v", after.Spec.Versions)
	}
	if _, ok := stages.VerificationFor(after, "v1"); ok {
		t.Error("the bridge record of v1 survived a check that found objects at v1 losing fields at v1beta1")
	}
	got, err := e.clients.Dynamic.Resource(v1).Namespace("default").Get(t.Context(), "g-new", metav1.GetOptions{})
	if err != nil || got.Object["spec"].(map[string]any)["extra"] != "keep" {
		t.Fatalf("g-new after the undone rollback: %v %v", got, err)
	}
	c, err := e.sb.StoredAPIVersions(t.Context(), "rb.example.com", "gizmos")
	if err != nil || c["rb.example.com/v1"] != 1 {
		t.Fatalf("etcd after the undone rollback: %v %v (want g-new still at v1)", c, err)
	}
}

// A storage switch needs a converter that answers both ways, objects or
// not: with no object, bridge proves it by a server-side dry-run create;
// once the webhook is gone, the switch to deprecated is refused before
// anything is written (else every write at v1 would fail after it).
func TestASwitchNeedsAConverterThatAnswers(t *testing.T) {
	e := newEnv(t, 0)
	wh := installEndpoints(t, e, 0)
	r := e.plugin("promote", "endpoints", "v2").mustCode(t, 0)
	contains(t, "bridge with no object", r.stdout, "v2 introduced → bridge")

	if err := wh.Stop(); err != nil {
		t.Fatal(err)
	}
	before := e.crdVersions()
	r = e.plugin("promote", "endpoints", "v2")
	if r.code != 1 || !contains1(r.stderr, "error: the conversion webhook does not answer: endpoints.net.example.com: a server-side dry-run create at v2, converted to v1 and back, failed") {
		t.Fatalf("promote to deprecated with the webhook gone: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	sameCRDs(t, before, e.crdVersions())
}

// The switch back needs the same: with v2 storage and the webhook gone,
// rollback is refused before anything is written.
func TestASwitchBackNeedsAConverterThatAnswers(t *testing.T) {
	e := newEnv(t, 0)
	wh := installEndpoints(t, e, 0)
	e.plugin("promote", "endpoints", "v2").mustCode(t, 0) // bridge
	e.plugin("promote", "endpoints", "v2").mustCode(t, 0) // deprecated: v2 is storage
	if err := wh.Stop(); err != nil {
		t.Fatal(err)
	}
	before := e.crdVersions()
	r := e.plugin("rollback", "endpoints")
	if r.code != 1 || !contains1(r.stderr, "error: the conversion webhook does not answer: endpoints.net.example.com: a server-side dry-run create at v1, converted to v2 and back, failed") {
		t.Fatalf("rollback with the webhook gone: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	sameCRDs(t, before, e.crdVersions())
}

// Each step records what it changed, and its rollback restores that, every
// version's flags and texts, and nothing else: v1alpha2 was deprecated with
// a text of its own and v1alpha1 unserved long before; the steps forward
// deprecate and stop serving v1beta1 only; taking them back one by one
// gives back spec.versions exactly as they were, the storage switch
// included (checked on every object, which keeps its fields in etcd).
func TestRollbackRestoresWhatItsStepRecorded(t *testing.T) {
	e := newEnv(t, 0)
	crd := fixtures.CRD("rb.example.com", "Relic", "relics", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1", Served: true},
		fixtures.Version{Name: "v1beta1", Served: true, Storage: true},
		fixtures.Version{Name: "v1alpha2", Served: true, Deprecated: true},
		fixtures.Version{Name: "v1alpha1", Deprecated: true})
	own := "relics v1alpha2 go away in 2027: move to v1"
	crd.Spec.Versions[2].DeprecationWarning = &own
	if _, err := e.clients.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	beta := schema.GroupVersionResource{Group: "rb.example.com", Version: "v1beta1", Resource: "relics"}
	if err := e.clients.CreateObjects(t.Context(), beta, "Relic", []fixtures.Object{{Namespace: "default", Name: "r-0", Spec: map[string]any{"a": "x"}}}); err != nil {
		t.Fatal(err)
	}
	e.plugin("promote", "relics", "v1").mustCode(t, 0) // bridge
	start := e.crd(crd.Name).Spec.Versions
	e.plugin("promote", "relics", "v1").mustCode(t, 0) // deprecated: the storage switch
	e.plugin("migrate", "relics", "--switch-grace=0s").mustCode(t, 0)
	// The object's creator wrote in the prune's second often enough here: a write in that second
	// is a client's to the gate, which this test is not about.
	e.plugin("promote", "relics", "v1", "--despite-clients=e2e.test").mustCode(t, 0) // blocked
	blocked := e.crd(crd.Name)
	if specVersion(blocked, "v1beta1").Served || specVersion(blocked, "v1alpha2").Served {
		t.Fatalf("after blocked: %+v", blocked.Spec.Versions)
	}

	r := e.plugin("rollback", "relics").mustCode(t, 0)
	contains(t, "rollback of blocked", r.stdout, "v1 blocked → deprecated", "served again as before the step: v1beta1, v1alpha2")
	back := e.crd(crd.Name)
	if specVersion(back, "v1alpha1").Served {
		t.Errorf("rollback of blocked served v1alpha1, which was unserved before the step: %+v", back.Spec.Versions)
	}
	r = e.plugin("rollback", "relics").mustCode(t, 0)
	contains(t, "rollback of deprecated", r.stdout, "v1 deprecated → bridge")
	back = e.crd(crd.Name)
	if !equality.Semantic.DeepEqual(back.Spec.Versions, start) {
		t.Errorf("after the steps and their rollbacks:\n%+v\nwant as after bridge:\n%+v", back.Spec.Versions, start)
	}
	if _, ok := back.Annotations[stages.StepsAnnotation]; !ok {
		t.Error("the record of bridge went with the rollbacks of the steps after it")
	}
	got, err := e.clients.Dynamic.Resource(beta).Namespace("default").Get(t.Context(), "r-0", metav1.GetOptions{})
	if err != nil || got.Object["spec"].(map[string]any)["a"] != "x" {
		t.Fatalf("r-0 after the rollbacks: %v %v", got, err)
	}
}
