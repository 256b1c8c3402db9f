package migrate_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// snapshots are n objects at v1beta1, the first held of which hold
// spec.snapshot, a field only v1beta1's schema has.
func snapshots(n, held int) []fixtures.Object {
	objs := make([]fixtures.Object, n)
	for i := range objs {
		spec := map[string]any{"a": fmt.Sprint(i)}
		if i < held {
			spec["snapshot"] = "fake-snapshot"
		}
		objs[i] = fixtures.Object{Namespace: "ns", Name: fmt.Sprintf("w-%02d", i), Spec: spec}
	}
	return objs
}

// newReleasedUnserved is a release that switches storage to v1 and stops
// serving v1beta1 at once, conversion None: v1beta1 {a, snapshot} holds
// the objects, v1 {a} is storage.
func newReleasedUnserved(t *testing.T, objs []fixtures.Object) *switched {
	t.Helper()
	s := newUnswitched(t, sandbox.Options{}, objs, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions[0].Schema = specSchema("a", "snapshot")
		crd.Spec.Versions[1].Schema = specSchema("a")
	})
	s.editCRD(t, unserveAndStore("v1beta1", "v1"))
	return s
}

// The plugin never re-stores on a notice: v1beta1 is served again, each
// object checked at it, the four holding spec.snapshot left as they are,
// and v1beta1 no longer served after, as the release had it.
func TestMigrateServesAnUnservedVersionForItsCheck(t *testing.T) {
	const n, held = 10, 4
	s := newReleasedUnserved(t, snapshots(n, held))
	if got := s.etcdHolding(t, "snapshot"); got != held {
		t.Fatalf("setup: %d objects hold spec.snapshot in etcd, want %d", got, held)
	}
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	if err != nil {
		t.Fatal(err)
	}
	if got := s.etcdHolding(t, "snapshot"); got != held {
		t.Errorf("%d of %d objects hold spec.snapshot in etcd after migrate: the re-store dropped it", got, held)
	}
	if res.Lost != held || res.Pruned {
		t.Errorf("lost %d (want %d), pruned %v: want the objects holding spec.snapshot found and left, nothing pruned", res.Lost, held, res.Pruned)
	}
	if res.ServedAgain == nil || !res.ServedAgain.Undone || fmt.Sprint(res.ServedAgain.Versions) != "[v1beta1]" {
		t.Errorf("servedAgain %+v: want v1beta1 served for the check and unserved after", res.ServedAgain)
	}
	s.assertAsReleased(t, "v1beta1")
	if r := s.refusedRecord(t); r == nil || r.Objects != held {
		t.Errorf("the CRD notes %+v of the objects left, want %d (status names them)", r, held)
	}
}

// The control: no object holds what only v1beta1 has. Each is proven at
// v1beta1, re-stored and the prune goes through: a plugin that refuses
// every unserved version fails here.
func TestMigrateServedAgainLosesNothingAndPrunes(t *testing.T) {
	const n = 10
	s := newReleasedUnserved(t, snapshots(n, 0))
	before := s.contents(t)
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pruned || res.Rewritten != n {
		t.Fatalf("%+v: want all %d re-stored and storedVersions pruned", res, n)
	}
	if got := s.stored(t); got["example.com/v1"] != n {
		t.Errorf("etcd: %v, want all %d at v1", got, n)
	}
	if res.ServedAgain == nil || !res.ServedAgain.Undone {
		t.Errorf("servedAgain %+v", res.ServedAgain)
	}
	s.assertAsReleased(t, "v1beta1")
	assertSame(t, before, s.contents(t))
}

// A CRD a GitOps tool syncs: its self-heal would unserve v1beta1 again
// mid-pass and stop it, so migrate says so before it serves v1beta1, with
// the evidence and what to pause.
func TestMigrateServedAgainWarnsOfAGitOpsSync(t *testing.T) {
	s := newReleasedUnserved(t, snapshots(3, 0))
	s.editCRD(t, func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Annotations = map[string]string{"argocd.argoproj.io/tracking-id": "crds:apiextensions.k8s.io/CustomResourceDefinition:/" + crd.Name}
	})
	o := opts()
	var told []string
	o.Notify = func(msg string) { told = append(told, msg) }
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
	if err != nil || !res.Pruned {
		t.Fatalf("%+v %v", res, err)
	}
	if !slices.ContainsFunc(told, func(m string) bool {
		return strings.Contains(m, "Argo CD syncs this CRD (annotation argocd.argoproj.io/tracking-id=") && strings.Contains(m, "pause its automated sync or self-heal")
	}) {
		t.Errorf("notices %q: want the Argo CD sync named before v1beta1 is served again", told)
	}
}

// With no object, nothing can be stored at v1beta1 (no object is written
// at a version that is not storage): nothing is served again, and the
// prune goes through.
func TestMigrateWithNoObjectsServesNothingAgain(t *testing.T) {
	s := newReleasedUnserved(t, nil)
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pruned || res.ServedAgain != nil {
		t.Fatalf("pruned %v, servedAgain %+v: want the prune and nothing served again", res.Pruned, res.ServedAgain)
	}
}

// assertAsReleased checks the CRD serves as the release left it: version
// not served, and no step record of the plugin left on it.
func (s *switched) assertAsReleased(t *testing.T, version string) {
	t.Helper()
	crd, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := stages.SpecVersion(crd, version); v == nil || v.Served || v.Deprecated {
		t.Errorf("%s after migrate: %+v, want it unserved and not deprecated, as released", version, v)
	}
	if steps := stages.Steps(crd); len(steps) > 0 {
		t.Errorf("step records left on the CRD: %+v", steps)
	}
}

func (s *switched) refusedRecord(t *testing.T) *lifecycle.Refused {
	t.Helper()
	crd, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return stages.RefusedFor(crd)
}
