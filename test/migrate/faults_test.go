package migrate_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/convwebhook"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// v1 refuses to update objects marked legacy: a CEL transition rule, which
// (unlike plain schema checks) is not ratcheted, so the re-store's no-op
// write of such an object is rejected.
func refuseLegacy(crd *apiextensionsv1.CustomResourceDefinition) {
	spec := crd.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"]
	spec.Properties = map[string]apiextensionsv1.JSONSchemaProps{"legacy": {Type: "string"}}
	spec.XValidations = apiextensionsv1.ValidationRules{{Rule: "!has(oldSelf.legacy)", Message: "legacy widgets must be re-created, not updated"}}
	crd.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"] = spec
}

func TestMigrateReportsRejectedObjectsAndDoesNotPrune(t *testing.T) {
	objs := make([]fixtures.Object, 40)
	for i := range objs {
		objs[i] = widget(i)
		if i%13 == 0 {
			objs[i].Spec["legacy"] = "yes"
		}
	}
	s := newSwitchedWith(t, sandbox.Options{}, objs, refuseLegacy)
	before := s.stored(t)

	// The preflight finds them and writes nothing.
	o := opts()
	o.Restore.DryRun = migration.DryRunServer
	dry, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
	if err != nil {
		t.Fatal(err)
	}
	if dry.Failed != 4 || dry.Pruned || fmt.Sprint(s.stored(t)) != fmt.Sprint(before) {
		t.Fatalf("dry run: %+v, etcd %v -> %v", dry.RestoreResult, before, s.stored(t))
	}

	res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range res.Failures {
		names = append(names, f.Name)
		if f.Code != 422 || f.Reason != "Invalid" || !strings.Contains(f.Message, "legacy widgets must be re-created") {
			t.Errorf("failure %+v", f)
		}
	}
	if strings.Join(names, ",") != "w-0000,w-0039,w-0013,w-0026" || res.Pruned || !strings.Contains(res.PruneSkipped, "not every object") {
		t.Fatalf("failures %v, pruned %v (%s)", names, res.Pruned, res.PruneSkipped)
	}
	if !res.NeedsAttention(true) {
		t.Error("a run with failures does not ask for attention")
	}
	// The rejected objects were left as they were, the rest re-stored.
	if c := s.stored(t); c["example.com/v1beta1"] != 4 || c["example.com/v1"] != 36 {
		t.Errorf("etcd: %v", c)
	}
}

func TestMigrateStopsWhenConversionsStartFailing(t *testing.T) {
	wh, err := convwebhook.Start(convwebhook.Correct)
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Stop()
	const n = 200
	s := newSwitched(t, sandbox.Options{}, n, wh.Conversion())
	o := opts()
	o.Restore.Concurrency = 2
	var once sync.Once
	o.Restore.Progress = func(done, total int64) {
		if done >= 20 {
			once.Do(func() { wh.SetMode(convwebhook.Failing) })
		}
	}
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Stopped, "conversion webhook is failing") || res.Pruned || res.Failed == 0 {
		t.Fatalf("result %+v", res)
	}
	// Writing stopped soon after: far from every object was attempted.
	if attempted := res.Rewritten + res.Unchanged + res.Failed; attempted > n/2 {
		t.Errorf("%d of %d objects attempted after conversions failed", attempted, n)
	}
	wh.SetMode(convwebhook.Correct)
	again, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	if err != nil || !again.Complete() || !again.Pruned {
		t.Fatalf("rerun: %+v %v", again, err)
	}
	if c := s.stored(t); c["example.com/v1"] != n || len(c) != 1 {
		t.Fatalf("etcd after rerun: %v", c)
	}
}

func TestMigrateInterruptedThenRerun(t *testing.T) {
	const n = 300
	s := newSwitched(t, sandbox.Options{}, n, nil)
	before := s.contents(t)
	ctx, cancel := context.WithCancel(t.Context())
	o := opts()
	o.Restore.Concurrency = 2
	o.Restore.Progress = func(done, total int64) {
		if done == 50 {
			cancel() // Ctrl-C
		}
	}
	res, err := migration.Migrate(ctx, s.clients, s.crd, o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Stopped, "interrupted") || res.Pruned || res.Failed != 0 || res.Rewritten >= n {
		t.Fatalf("interrupted run: %+v", res)
	}
	again, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	// Writes in flight at the interrupt were abandoned: the server may have
	// made them without the first run seeing it, so up to Concurrency
	// objects are counted by neither run.
	if sum := again.Rewritten + res.Rewritten; err != nil || !again.Complete() || !again.Pruned || sum > n || sum < n-int64(o.Restore.Concurrency) {
		t.Fatalf("rerun: %+v %v (first run re-stored %d)", again, err, res.Rewritten)
	}
	assertSame(t, before, s.contents(t))
}

// The API server goes away mid-run: the run stops cleanly (nothing lost,
// nothing pruned); against the restarted server a rerun completes.
func TestMigrateAPIServerGoneMidRun(t *testing.T) {
	const n = 300
	s := newSwitched(t, sandbox.Options{}, n, nil)
	before := s.contents(t)
	o := opts()
	o.Restore.Concurrency, o.Restore.RetryFor = 2, 2*time.Second
	var once sync.Once
	// The server is stopped before the 41st object's worker goes on: the
	// rest of the run meets no server, however fast it would have been.
	o.Restore.Progress = func(done, total int64) {
		if done == 40 {
			once.Do(func() { _ = s.sb.StopAPIServer() })
		}
	}
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Stopped, "the API server did not answer") || res.Pruned {
		t.Fatalf("run with the server gone: %+v", res)
	}
	if err := s.sb.StartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	again, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	if err != nil || !again.Complete() || !again.Pruned {
		t.Fatalf("rerun: %+v %v", again, err)
	}
	if c := s.stored(t); c["example.com/v1"] != n || len(c) != 1 {
		t.Fatalf("etcd after rerun: %v", c)
	}
	assertSame(t, before, s.contents(t))
}

// The API server restarts mid-run at the same address, as a kube-apiserver
// does on a control-plane upgrade: the run rides it out, retrying what the
// restart cut off, and completes and prunes; nothing is lost or changed.
func TestMigrateRidesOutAPIServerRestart(t *testing.T) {
	const n = 300
	s := newSwitched(t, sandbox.Options{}, n, nil)
	before := s.contents(t)
	o := opts()
	// A restart on a loaded machine can take longer than the default
	// retry window; this test is about riding it out, not its pace.
	o.Restore.Concurrency, o.Restore.RetryFor = 2, 2*time.Minute
	restarted := make(chan error, 1)
	var once sync.Once
	o.Restore.Progress = func(done, total int64) {
		if done == 40 {
			once.Do(func() { go func() { restarted <- s.sb.RestartAPIServer(t.Context()) }() })
		}
	}
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	if !res.Complete() || !res.Pruned || res.Rewritten+res.Conflicted != n {
		t.Fatalf("run across a restart: %+v", res)
	}
	if c := s.stored(t); c["example.com/v1"] != n || len(c) != 1 {
		t.Fatalf("etcd after the run: %v", c)
	}
	assertSame(t, before, s.contents(t))
}

// Writers update (some objects constantly), create and delete during the
// migration: none of their writes is lost, and the end state is migrated.
func TestMigrateWithConcurrentWriters(t *testing.T) {
	const n = 300
	s := newSwitched(t, sandbox.Options{}, n, nil)
	// The writers begin once the switch is in effect: a write begun before
	// it may land at v1beta1 behind the pass, which the grace covers, and
	// this test runs without one.
	crd, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fixtures.WaitStorageInEffect(t.Context(), s.clients.Discovery, crd, time.Minute); err != nil {
		t.Fatal(err)
	}
	ri := s.fx.Dynamic.Resource(s.gvr)
	ctx, stop := context.WithCancel(t.Context())
	var (
		wg      sync.WaitGroup
		written sync.Map // name -> last spec.counter the server confirmed
		tried   sync.Map // name -> last spec.counter sent (it may commit unconfirmed)
		created atomic.Int64
	)
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("w-%04d", w) // hot keys, updated constantly
			ns := fmt.Sprintf("ns-%d", w%3)
			for i := 1; ctx.Err() == nil; i++ {
				obj, err := ri.Namespace(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					continue
				}
				_ = unstructured.SetNestedField(obj.Object, int64(i), "spec", "counter")
				tried.Store(ns+"/"+name, int64(i))
				if _, err := ri.Namespace(ns).Update(ctx, obj, metav1.UpdateOptions{}); err == nil {
					written.Store(ns+"/"+name, int64(i))
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // creates new objects and deletes old ones
		defer wg.Done()
		for i := 0; ctx.Err() == nil && i < 200; i++ {
			o := widget(10000 + i)
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]any{"name": o.Name, "namespace": o.Namespace}, "spec": o.Spec}}
			if _, err := ri.Namespace(o.Namespace).Create(ctx, u, metav1.CreateOptions{}); err == nil {
				created.Add(1)
			}
			old := widget(n - 1 - i)
			_ = ri.Namespace(old.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{})
		}
	}()
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	stop()
	wg.Wait()
	if err != nil || !res.Complete() {
		t.Fatalf("migrate: %+v %v", res, err)
	}
	c := s.stored(t)
	if len(c) != 1 || c["example.com/v1"] == 0 {
		t.Fatalf("etcd after migrate with writers: %v", c)
	}
	written.Range(func(k, v any) bool {
		ns, name, _ := strings.Cut(k.(string), "/")
		obj, err := ri.Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", k, err)
			return true
		}
		sent, _ := tried.Load(k)
		if got, _, _ := unstructured.NestedInt64(obj.Object, "spec", "counter"); got != v.(int64) && got != sent.(int64) {
			t.Errorf("%s: spec.counter %d, the writer's last confirmed write was %d: a write was lost", k, got, v)
		}
		return true
	})
	t.Logf("migration %+v; writers created %d objects meanwhile", res.RestoreResult, created.Load())
}

func assertSame(t *testing.T, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed: %s -> %s", k, v, after[k])
		}
	}
}
