package migrate_test

import (
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// An importer walks a version through its lifecycle with Promote and
// Migrate alone, zero options but the prune: each step runs its checks, and
// the walk ends with v1beta1 gone from the CRD, from storedVersions and
// from etcd.
func TestPromoteWalksTheLifecycle(t *testing.T) {
	const n = 120
	objs := make([]fixtures.Object, n)
	for i := range objs {
		objs[i] = widget(i)
	}
	s := newUnswitched(t, sandbox.Options{}, objs, func(*apiextensionsv1.CustomResourceDefinition) {})

	var tasks []string
	opts := migration.PromoteOptions{DespiteClients: sharedMetric, Progress: func(task string, done, total int64) {
		if len(tasks) == 0 || tasks[len(tasks)-1] != task {
			tasks = append(tasks, task)
		}
	}}
	step := func(want lifecycle.Stage) *results.PromoteResult {
		t.Helper()
		res, err := migration.Promote(t.Context(), s.clients, s.crd, opts)
		if err != nil {
			t.Fatalf("promote to %s: %v", want, err)
		}
		if res.Plan.To != want {
			t.Fatalf("promote took %s → %s, want → %s", res.Plan.From, res.Plan.To, want)
		}
		return res
	}

	bridge := step(lifecycle.StageBridge)
	if bridge.Verify == nil || !bridge.Verify.Passed() || bridge.Verify.Objects != n {
		t.Fatalf("bridge verify: %+v", bridge.Verify)
	}
	deprecated := step(lifecycle.StageDeprecated)
	if deprecated.Switch == nil || !deprecated.Switch.Holds() || deprecated.Switch.Back != nil {
		t.Fatalf("switch check: %+v", deprecated.Switch)
	}
	if _, err := migration.Promote(t.Context(), s.clients, s.crd, opts); err == nil {
		t.Fatal("blocked was taken with v1beta1 still in storedVersions")
	}
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, migration.Options{SwitchGrace: -1})
	if err != nil || !res.Pruned || res.Rewritten != n {
		t.Fatalf("migrate: %+v, %v", res, err)
	}
	step(lifecycle.StageBlocked)
	removed := step(lifecycle.StageRemoved)
	if mf := removed.ManagedFields; mf == nil || !mf.Complete() || mf.Rewritten != n {
		t.Fatalf("managedFields cleanup: %+v", mf)
	}
	crd, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 || fmt.Sprint(crd.Status.StoredVersions) != "[v1]" {
		t.Errorf("after removed: versions %d, storedVersions %v", len(crd.Spec.Versions), crd.Status.StoredVersions)
	}
	if c := s.stored(t); len(c) != 1 || c["example.com/v1"] != n {
		t.Errorf("etcd after the walk: %v", c)
	}
	// The schemas prove old→new→old (conversion None, the same schema), so
	// the switch needs no pass over the objects.
	if p := deprecated.Switch.Proofs; len(p) != 1 || p[0].By != results.ProofSchema {
		t.Errorf("switch proofs %+v, want one by the schemas", p)
	}
	want := []string{"verify v1→v1beta1→v1", "clean managedFields of " + s.crd}
	if fmt.Sprint(tasks) != fmt.Sprint(want) {
		t.Errorf("progress tasks %q, want %q", tasks, want)
	}
}
