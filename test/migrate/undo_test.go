package migrate_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// v1 adds spec.extra, which v1beta1 lacks: with conversion None, an object
// stored at v1beta1 loses it.
func extraOnlyInV1(crd *apiextensionsv1.CustomResourceDefinition) {
	crd.Spec.Versions[0].Schema = specSchema("hostPort")
	crd.Spec.Versions[1].Schema = specSchema("hostPort", "extra")
}

// rollback switches storage back to v1beta1, finds an object whose
// spec.extra v1beta1 would drop, and switches to v1 again. One API server
// of four sees the switch back and then, late, not the undo: until it
// does, a write through it is stored at v1beta1 and drops the field. Before,
// rollback returned as soon as one server had the undo (exit 1, "v1 stays
// storage"), and a label update through the late server right after lost
// spec.extra. Now it returns only once every server its connections reach
// has the undo, and says so where one has not within --wait-timeout.
func TestAnUndoReturnsOnlyOnceEveryServerHasIt(t *testing.T) {
	s := newUnswitched(t, sandbox.Options{}, widgets(4), extraOnlyInV1)
	for _, to := range []lifecycle.Stage{lifecycle.StageBridge, lifecycle.StageDeprecated} {
		if _, err := migration.Promote(t.Context(), s.clients, s.crd, migration.PromoteOptions{Version: "v1", To: to}); err != nil {
			t.Fatalf("promote to %s: %v", to, err)
		}
	}
	extra := fixtures.Object{Namespace: "ns-0", Name: "extra", Spec: map[string]any{"hostPort": "h", "extra": "keep"}}
	if err := s.fx.CreateObjects(t.Context(), s.gvr, "Widget", []fixtures.Object{extra}); err != nil {
		t.Fatal(err)
	}

	cfgs := []*rest.Config{s.sb.RestConfig()}
	for range 2 {
		cfgs = append(cfgs, s.sb.AddAPIServerT(t, sandbox.ServerOptions{}).RestConfig())
	}
	late := s.sb.AddAPIServerT(t, sandbox.ServerOptions{Late: true})
	cfgs = append(cfgs, late.RestConfig())
	var release sync.Once
	t.Cleanup(func() { release.Do(late.WatchHold.Release) })
	v1, v1beta1 := svHash("example.com", "v1", "Widget"), svHash("example.com", "v1beta1", "Widget")
	for _, cfg := range cfgs {
		waitForHash(t, cfg, v1)
	}
	c := balancedClients(t, cfgs)

	// Once the check of the switch back runs, the late server has it; from
	// then on it sees no CRD change, the undo included.
	var hold sync.Once
	_, err := migration.Rollback(t.Context(), c, s.crd, migration.RollbackOptions{SwitchTimeout: 3 * time.Second, Progress: func(string, int64, int64) {
		hold.Do(func() {
			waitForHash(t, cfgs[3], v1beta1)
			late.WatchHold.Hold()
		})
	}})
	if err == nil || errors.Is(err, migration.ErrRollbackUndone) || !strings.Contains(err.Error(), "1 of the 4 API servers the connections reach do not store") ||
		!strings.Contains(err.Error(), "a write through them is stored at v1beta1") {
		t.Fatalf("rollback with one server late to see the undo: %v\nwant it to say that server does not store at v1 yet", err)
	}
	now, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil || stages.StorageVersion(now) != "v1" {
		t.Fatalf("after the undo: storage %s, %v", stages.StorageVersion(now), err)
	}

	// Once it has the undo, a label update through it keeps the field.
	release.Do(late.WatchHold.Release)
	waitForHash(t, cfgs[3], v1)
	through, err := dynamic.NewForConfig(cfgs[3])
	if err != nil {
		t.Fatal(err)
	}
	w := through.Resource(s.gvr).Namespace("ns-0")
	// Its discovery and its handler of the objects follow the CRD in
	// handlers of their own: the handler has the undo once a dry-run
	// create at v1 keeps spec.extra (stored at v1beta1, it would drop it).
	probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "probe", "namespace": "ns-0"}, "spec": map[string]any{"hostPort": "h", "extra": "x"}}}
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := w.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, nil
		}
		_, kept, _ := unstructured.NestedString(got.Object, "spec", "extra")
		return kept, nil
	})
	if err != nil {
		t.Fatalf("the late server still stores at v1beta1 after it showed v1 in discovery: %v", err)
	}
	if _, err := w.Patch(t.Context(), "extra", types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := s.storedAt(t, "ns-0", "extra"); got != "example.com/v1" {
		t.Errorf("the object is stored at %s after a write through the late server, want example.com/v1", got)
	}
	obj, err := w.Get(context.Background(), "extra", metav1.GetOptions{})
	if err != nil || obj.Object["spec"].(map[string]any)["extra"] != "keep" {
		t.Fatalf("the object after the undo and a label update: %v %v", obj, err)
	}
}
