package migrate_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// midPass runs migrate on s, one object at a time, and calls edit once,
// after the second object: edit changes the CRD and returns once the API
// server serves the change. The pass then goes on only after it has said
// it saw the change, or after a minute: without the watch it would write
// every object left under the new CRD.
func midPass(t *testing.T, s *switched, edit func()) *results.Result {
	t.Helper()
	saw := make(chan struct{})
	var once, editOnce sync.Once
	o := opts()
	o.Restore.Concurrency, o.Restore.PageSize = 1, 4
	o.Log = funcr.New(func(_, args string) {
		if strings.Contains(args, "CRD changed") {
			once.Do(func() { close(saw) })
		}
	}, funcr.Options{})
	o.Restore.Progress = func(done, _ int64) {
		if done != 2 {
			return
		}
		editOnce.Do(func() {
			edit()
			select {
			case <-saw:
			case <-time.After(time.Minute):
			}
		})
	}
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A GitOps revert switches storage back to v1beta1 while migrate re-stores
// at v1. v1 has spec.extra, v1beta1 has not, and every object was written
// at v1 with it. A re-store sent at v1 after the switch back is stored at
// v1beta1, and drops spec.extra: the pass must stop writing once the CRD
// moves, say what moved, and prune nothing.
func TestMigrateStopsWhenStorageIsSwitchedBackMidPass(t *testing.T) {
	const n = 12
	s := newUnswitched(t, sandbox.Options{}, legacyWidgets(n), func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions[0].Schema = specSchema("hostPort", "legacy")
		crd.Spec.Versions[1].Schema = specSchema("hostPort", "legacy", "extra")
	})
	if err := s.fx.SwitchStorageInEffect(t.Context(), s.crd, "v1"); err != nil {
		t.Fatal(err)
	}
	// Discovery shows the switch a moment before every handler of the
	// server stores by it: the objects are patched until etcd holds
	// spec.extra in each (the test's premise, not the plugin's).
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for i := range n {
			w := widget(i)
			if _, err := s.fx.Dynamic.Resource(s.gvr).Namespace(w.Namespace).Patch(ctx, w.Name, types.MergePatchType, []byte(`{"spec":{"extra":"only-at-v1"}}`), metav1.PatchOptions{}); err != nil {
				return false, err
			}
		}
		return s.etcdHolding(t, "extra") == n, nil
	})
	if err != nil {
		t.Fatalf("the objects do not hold spec.extra at v1: %v", err)
	}
	res := midPass(t, s, func() {
		if err := s.fx.SwitchStorageInEffect(t.Context(), s.crd, "v1beta1"); err != nil {
			t.Error(err)
		}
	})
	if res.StopReason != results.StopCRDChanged || !strings.Contains(res.Stopped, "storage version v1 → v1beta1") {
		t.Errorf("stopped %q (%s), want CRDChanged naming the switch back", res.StopReason, res.Stopped)
	}
	if res.Pruned {
		t.Error("pruned after the CRD changed mid-pass")
	}
	if got := s.etcdHolding(t, "extra"); got != n {
		t.Errorf("%d of %d objects hold spec.extra in etcd: a write after the switch back dropped it", got, n)
	}
}

// The next release's CRD is synced while migrate re-stores: v1's schema no
// longer has spec.legacy. The schemas proved old→new→old when the pass
// began; a re-store under the new schema prunes the field from every
// object stored at v1beta1.
func TestMigrateStopsWhenTheSchemaNarrowsMidPass(t *testing.T) {
	const n = 12
	s := newSwitchedWith(t, sandbox.Options{}, legacyWidgets(n), func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions[0].Schema = specSchema("hostPort", "legacy")
		crd.Spec.Versions[1].Schema = specSchema("hostPort", "legacy")
	})
	if err := s.fx.SwitchStorageInEffect(t.Context(), s.crd, "v1"); err != nil {
		t.Fatal(err)
	}
	holding := s.etcdHolding(t, "legacy")
	res := midPass(t, s, func() {
		s.editCRD(t, func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[1].Schema = specSchema("hostPort")
		})
		s.untilV1Prunes(t, "legacy")
	})
	if res.StopReason != results.StopCRDChanged || !strings.Contains(res.Stopped, "the schema of v1") {
		t.Errorf("stopped %q (%s), want CRDChanged naming v1's schema", res.StopReason, res.Stopped)
	}
	if res.Pruned {
		t.Error("pruned after the CRD changed mid-pass")
	}
	if got := s.etcdHolding(t, "legacy"); got != holding {
		t.Errorf("%d of %d objects hold spec.legacy in etcd after the pass: a write under the narrowed schema dropped it", got, holding)
	}
}

// untilV1Prunes waits until the API server's v1 drops spec.field from an
// object it is sent (a dry-run create): it serves the narrowed schema.
func (s *switched) untilV1Prunes(t *testing.T, field string) {
	t.Helper()
	probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "probe", "namespace": "ns-0"}, "spec": map[string]any{field: "x"}}}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := s.fx.Dynamic.Resource(s.gvr).Namespace("ns-0").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, nil
		}
		_, kept, _ := unstructured.NestedString(got.Object, "spec", field)
		return !kept, nil
	})
	if err != nil {
		t.Fatalf("v1 still keeps spec.%s: %v", field, err)
	}
}

// etcdHolding counts the objects whose etcd value holds spec.field: what a
// read shows depends on the schema served now, what is stored does not.
func (s *switched) etcdHolding(t *testing.T, field string) int {
	t.Helper()
	resp, err := s.sb.Etcd().Get(t.Context(), "/registry/example.com/widgets/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, kv := range resp.Kvs {
		var obj struct {
			Spec map[string]any `json:"spec"`
		}
		if err := json.Unmarshal(kv.Value, &obj); err != nil {
			t.Fatalf("%s: %v", kv.Key, err)
		}
		if _, ok := obj.Spec[field]; ok {
			n++
		}
	}
	return n
}

// promote --to deprecated finds that v1 drops spec.legacy and switches
// back. Meanwhile another writer removed v1alpha1, which the step had
// deprecated too and which was never stored. The undo puts back what the
// step changed on the CRD as it is now: storage is v1beta1 again and no
// longer deprecated, v1alpha1 stays removed, and every object keeps its
// field.
func TestAnUndoPutsBackWhatItsStepChangedWhateverElseChanged(t *testing.T) {
	const n = 6
	crd := fixtures.CRD("example.com", "Widget", "widgets", apiextensionsv1.NamespaceScoped, true,
		fixtures.Version{Name: "v1alpha1", Served: true},
		fixtures.Version{Name: "v1beta1", Served: true, Storage: true},
		fixtures.Version{Name: "v1", Served: true})
	crd.Spec.Versions[0].Schema = specSchema("hostPort", "legacy")
	crd.Spec.Versions[1].Schema = specSchema("hostPort", "legacy")
	crd.Spec.Versions[2].Schema = specSchema("hostPort")
	s := newWidgets(t, sandbox.Options{}, crd, legacyWidgets(n))
	holding := s.etcdHolding(t, "legacy")
	if _, err := migration.Promote(t.Context(), s.clients, s.crd, migration.PromoteOptions{Version: "v1"}); err != nil {
		t.Fatalf("bridge: %v", err)
	}
	var once sync.Once
	opts := migration.PromoteOptions{Version: "v1", To: lifecycle.StageDeprecated, Progress: func(task string, _, _ int64) {
		once.Do(func() {
			s.editCRD(t, func(crd *apiextensionsv1.CustomResourceDefinition) {
				crd.Spec.Versions = slices.DeleteFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == "v1alpha1" })
			})
		})
	}}
	_, err := migration.Promote(t.Context(), s.clients, s.crd, opts)
	if !errors.Is(err, migration.ErrSwitchedBack) {
		t.Fatalf("promote --to deprecated: %v, want it switched back", err)
	}
	now, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := stages.StorageVersion(now); got != "v1beta1" {
		t.Errorf("storage version %s after the undo, want v1beta1", got)
	}
	for _, v := range now.Spec.Versions {
		switch {
		case v.Name == "v1alpha1":
			t.Error("the undo brought back v1alpha1, which another writer removed")
		case v.Deprecated:
			t.Errorf("%s is still deprecated after the undo", v.Name)
		}
	}
	if got := s.etcdHolding(t, "legacy"); got != holding {
		t.Errorf("%d of %d objects hold spec.legacy in etcd", got, holding)
	}
}
