package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/convwebhook"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// specSchema is a structural schema whose spec holds the string fields
// named; status keeps anything.
func specSchema(fields ...string) *apiextensionsv1.CustomResourceValidation {
	keep := true
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	for _, f := range fields {
		spec.Properties[f] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec, "status": {Type: "object", XPreserveUnknownFields: &keep}}}}
}

// editCRD changes the CRD as a chart upgrade would, retrying conflicts.
func (s *switched) editCRD(t *testing.T, edit func(*apiextensionsv1.CustomResourceDefinition)) {
	t.Helper()
	crds := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := crds.Get(t.Context(), s.crd, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(crd)
		_, err = crds.Update(t.Context(), crd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// unserveAndStore stops serving old and makes storage the storage version.
func unserveAndStore(old, storage string) func(*apiextensionsv1.CustomResourceDefinition) {
	return func(crd *apiextensionsv1.CustomResourceDefinition) {
		for i := range crd.Spec.Versions {
			v := &crd.Spec.Versions[i]
			v.Storage = v.Name == storage
			if v.Name == old {
				v.Served = false
			}
		}
	}
}

// holding counts the objects that, read at version, hold spec.field.
func (s *switched) holding(t *testing.T, version, field string) int {
	t.Helper()
	list, err := s.fx.Dynamic.Resource(schema.GroupVersionResource{Group: "example.com", Version: version, Resource: "widgets"}).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range list.Items {
		if _, ok, _ := unstructured.NestedString(o.Object, "spec", field); ok {
			n++
		}
	}
	return n
}

// A chart upgrade stops serving v1alpha1 and makes v1 storage; v1's schema
// drops spec.legacy, which v1alpha1 and v1beta1 hold. v1alpha1 is served
// again for the check: the objects holding spec.legacy are found at it,
// and left as they are. The managedFields cleanup is part of the re-store's one write: it
// leaves them alone too, with their entries at v1alpha1, and nothing is
// pruned, however often migrate runs.
func TestCleanupLeavesTheObjectsTheCheckLeft(t *testing.T) {
	const n = 10
	crd := fixtures.CRD("example.com", "Widget", "widgets", apiextensionsv1.NamespaceScoped, true,
		fixtures.Version{Name: "v1alpha1", Served: true, Storage: true},
		fixtures.Version{Name: "v1beta1", Served: true},
		fixtures.Version{Name: "v1", Served: true})
	crd.Spec.Versions[0].Schema = specSchema("hostPort", "legacy")
	crd.Spec.Versions[1].Schema = specSchema("hostPort", "legacy")
	crd.Spec.Versions[2].Schema = specSchema("hostPort")
	s := newWidgets(t, sandbox.Options{}, crd, legacyWidgets(n))
	s.editCRD(t, unserveAndStore("v1alpha1", "v1"))

	o := opts()
	o.CleanManagedFields = true
	for run := 1; run <= 2; run++ {
		res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Pruned || res.Lost != n/2 || !res.NeedsAttention(true) {
			t.Fatalf("run %d: %+v: want the %d objects holding spec.legacy left, nothing pruned", run, res, n/2)
		}
		if len(res.Proofs) != 1 || res.Proofs[0].By != results.ProofObjects || fmt.Sprint(res.Proofs[0].CheckedAt) != "[v1alpha1]" || len(res.Proofs[0].Losses) != n/2 || res.ServedAgain == nil {
			t.Fatalf("run %d: proofs %+v: want v1alpha1 served again and its objects checked at it", run, res.Proofs)
		}
		if mf := res.ManagedFields; mf == nil || mf.Failed != n/2 || (run == 1 && mf.Rewritten != n/2) {
			t.Errorf("run %d: managedFields %+v: want %d cleaned on the first run, %d left", run, mf, n/2, n/2)
		}
		if got := s.holding(t, "v1beta1", "legacy"); got != n/2 {
			t.Fatalf("run %d: %d objects hold spec.legacy at v1beta1, want %d", run, got, n/2)
		}
	}
	if c := s.stored(t); c["example.com/v1alpha1"] != n/2 || c["example.com/v1"] != n/2 {
		t.Errorf("etcd: %v", c)
	}
	left, err := s.clients.Metadata.Resource(s.gvr).Namespace("ns-0").Get(t.Context(), "w-0000", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmt.Sprint(left.ManagedFields), "example.com/v1alpha1") {
		t.Errorf("w-0000, left for its loss, lost its managedFields entry at v1alpha1: %v", left.ManagedFields)
	}
}

// Conversion None, three versions: v1 {a, x} stored, v2 {a}, v3 {a, x}. An
// upgrade stops serving v1 and makes v2 storage. What only v1 holds may
// reach no served version: migrate serves v1 again for the check, finds
// every object losing x, re-stores none, and unserves v1 after, whether or
// not v3 is served.
func TestMigrateChecksAnUnservedVersionAtItself(t *testing.T) {
	const n = 6
	objs := make([]fixtures.Object, n)
	for i := range objs {
		objs[i] = fixtures.Object{Namespace: "ns", Name: fmt.Sprintf("w-%d", i), Spec: map[string]any{"a": "1", "x": fmt.Sprintf("keep-%d", i)}}
	}
	newThree := func(t *testing.T, v3 bool) *switched {
		crd := fixtures.CRD("example.com", "Widget", "widgets", apiextensionsv1.NamespaceScoped, true,
			fixtures.Version{Name: "v1", Served: true, Storage: true},
			fixtures.Version{Name: "v2", Served: true},
			fixtures.Version{Name: "v3", Served: v3})
		crd.Spec.Versions[0].Schema = specSchema("a", "x")
		crd.Spec.Versions[1].Schema = specSchema("a")
		crd.Spec.Versions[2].Schema = specSchema("a", "x")
		s := newWidgets(t, sandbox.Options{}, crd, objs)
		s.gvr.Version = "v2"
		s.editCRD(t, unserveAndStore("v1", "v2"))
		return s
	}
	t.Run("v3 shows what v2 drops", func(t *testing.T) {
		s := newThree(t, true)
		if got := s.holding(t, "v3", "x"); got != n {
			t.Fatalf("setup: %d objects show x at v3", got)
		}
		res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
		if err != nil {
			t.Fatal(err)
		}
		if res.Pruned || res.Lost != n || len(res.Proofs) != 1 || fmt.Sprint(res.Proofs[0].CheckedAt) != "[v1]" || res.ServedAgain == nil {
			t.Fatalf("%+v, proofs %+v: want v1 served again, every object checked at it and left, nothing pruned", res, res.Proofs)
		}
		s.assertAsReleased(t, "v1")
		if got := s.holding(t, "v3", "x"); got != n {
			t.Errorf("%d of %d objects still show x at v3", got, n)
		}
	})
	t.Run("only the storage version is served", func(t *testing.T) {
		s := newThree(t, false)
		res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
		if err != nil {
			t.Fatal(err)
		}
		if res.Pruned || res.Lost != n || res.ServedAgain == nil || fmt.Sprint(res.Proofs[0].CheckedAt) != "[v1]" {
			t.Fatalf("%+v, proofs %+v: want v1 served again, every object checked at it and left, nothing pruned", res, res.Proofs)
		}
		s.assertAsReleased(t, "v1")
	})
}

// The plugin's own path never stops serving a version objects may still be
// stored at: blocked comes after migrate and prune.
func TestPromoteToBlockedNeedsTheMigration(t *testing.T) {
	s := newSwitched(t, sandbox.Options{}, 4, nil)
	_, err := migration.Promote(t.Context(), s.clients, s.crd, migration.PromoteOptions{Version: "v1", To: lifecycle.StageBlocked, DespiteClients: sharedMetric})
	var refusal *stages.Refusal
	if !errors.As(err, &refusal) || refusal.Instead == nil || !reflect.DeepEqual(*refusal.Instead, *stages.MigrateStep(s.crd)) {
		t.Fatalf("promote --to blocked with v1beta1 in storedVersions: %v, want a refusal naming migrate", err)
	}
	// The objects are this test's writes: a prune in their second would count them as a
	// client's (managedFields times are seconds), which this test is not about.
	next := time.Now().Truncate(time.Second).Add(time.Second)
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return time.Now().After(next), nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := migration.Migrate(t.Context(), s.clients, s.crd, opts()); err != nil {
		t.Fatal(err)
	}
	s.promote(t, lifecycle.StageBlocked)
}

// A write that entered before the switch lands after its object was
// re-stored, inside the grace, while the pass goes on past the grace's end.
// The pass began inside the grace, so it is followed by one more after it,
// however long it took: the late write is re-stored before the prune.
func TestMigrateReStoresOnceMoreWhenThePassOutlastsTheGrace(t *testing.T) {
	const n = 12
	s := newUnswitched(t, sandbox.Options{}, widgets(n), func(*apiextensionsv1.CustomResourceDefinition) {})
	// ns-0/w-0000 is the first key: with one worker, the first re-stored.
	late := startSlowPatch(t, s.sb.RestConfig(), v1beta1, "ns-0", "w-0000", []byte(`{"metadata":{"labels":{"late":"yes"}}}`))
	if err := s.fx.SwitchStorage(t.Context(), s.crd, "v1", false); err != nil {
		t.Fatal(err)
	}
	const grace = 2 * time.Second
	o := opts()
	o.SwitchGrace, o.Restore.Concurrency = grace, 1
	start := time.Now()
	var landed error
	first := true
	o.Restore.Progress = func(done, total int64) {
		if !first {
			return
		}
		if done == 1 {
			landed = late.send()
		}
		if done == n {
			first = false
			// The grace counts from when migrate saw the switch, plus a
			// margin of 5 s for clocks: the pass ends well after it.
			for time.Since(start) < grace+5*time.Second+2*time.Second {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
	if err != nil || landed != nil {
		t.Fatalf("migrate: %v; the late write: %v", err, landed)
	}
	if res.Settle == nil || !res.Settle.Complete() || res.Settle.Rewritten != 1 || !res.Pruned {
		t.Fatalf("%+v, settle %+v: want a second pass re-storing the late write, then the prune", res, res.Settle)
	}
	if got := s.storedAt(t, "ns-0", "w-0000"); got != "example.com/v1" {
		t.Errorf("w-0000 at %s", got)
	}
}

// A converter that has no form at v1beta1 for objects carrying spec.extra,
// a field only v1 has. Such objects were written at v1, after the switch:
// a read at v1beta1 asks the converter, who says no, so they are not
// stored at v1beta1 and there is nothing of them there to lose. The probe
// takes the refusal as the answer it is, the listing at v1beta1 goes
// object by object where a page holds one, and migrate ends done.
func TestMigrateThroughAConverterThatWillNotExpressAnObjectAtTheOldVersion(t *testing.T) {
	const n = 10
	s := newRefusing(t, n, "a-0", "a-1")
	o := opts()
	o.Restore.PageSize = 4
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pruned || res.NotAtOld != 2 || res.Rewritten != n || res.Failed != 0 {
		t.Fatalf("%+v: want the %d objects re-stored, the 2 only v1 expresses known not stored at v1beta1, and the prune", res, n)
	}
	if c := s.stored(t); c["example.com/v1"] != n+2 {
		t.Errorf("etcd: %v", c)
	}
	if got := s.holding(t, "v1", "extra"); got != 2 {
		t.Errorf("%d objects hold spec.extra at v1, want 2", got)
	}
}

// newRefusing is n objects stored at v1beta1 and, once storage is v1, one
// object of each name given written at v1 with spec.extra, which the
// converter of the CRD will not express at v1beta1.
func newRefusing(t *testing.T, n int, onlyV1 ...string) *switched {
	t.Helper()
	wh, err := convwebhook.Start(convwebhook.RefusesExtra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wh.Stop() })
	s := newSwitched(t, sandbox.Options{}, n, wh.Conversion())
	for i, name := range onlyV1 {
		o := fixtures.Object{Namespace: fmt.Sprintf("ns-%d", i%2), Name: name, Spec: map[string]any{"hostPort": fmt.Sprintf("h:%d", i), "extra": "v1-only"}}
		// Created at v1 once the switch is in effect: before, v1 objects are
		// stored at v1beta1, which the converter refuses them.
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := s.fx.CreateObjects(t.Context(), s.gvr, "Widget", []fixtures.Object{o})
			if err == nil {
				break
			}
			if time.Now().After(deadline) || !strings.Contains(err.Error(), "has no form") {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if _, err := s.fx.Dynamic.Resource(v1beta1).Namespace(o.Namespace).Get(t.Context(), name, metav1.GetOptions{}); err == nil {
			t.Fatalf("setup: the converter expressed %s at v1beta1", name)
		}
	}
	return s
}

// The check after a switch reads every object at the old version: a page
// holding an object the converter will not express there is listed where
// it converts least, and that object is known not stored at v1beta1, not
// a loss; the others are checked one by one.
func TestTheSwitchCheckTakesARefusalAsNotStoredThere(t *testing.T) {
	const n = 10
	s := newRefusing(t, n, "a-0", "a-1")
	crd, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	proofs, err := verify.ProveRestorable(t.Context(), s.clients.Clients, crd, verify.ProveOptions{PageSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(proofs) != 1 || !proofs[0].Holds() || proofs[0].NotStored != 2 || proofs[0].Objects != n {
		t.Fatalf("%+v: want the %d objects checked and the 2 only v1 expresses known not stored at v1beta1", proofs, n)
	}
}

// Every object the probe asks about is one the converter refuses at
// v1beta1: it answered each time, with a no, so migrate goes on.
func TestMigrateWhenTheConverterRefusesEveryObjectItIsAskedAbout(t *testing.T) {
	s := newRefusing(t, 0, "a-0", "a-1")
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Pruned || res.NotAtOld != 2 || res.Failed != 0 {
		t.Fatalf("%+v: want the 2 objects known not stored at v1beta1 and the prune", res)
	}
}

// v1, the new storage version, defaults a field v1beta1 does not have: the
// re-store's write persists the default, which moves the generation. That is
// the storage version's defaulting, said before the write with its value and
// counted after it, and no change to look at (exit 0): the write's answer
// shows nothing else changed. Any other change stays one (TestFilledByDefaults
// in pkg/migrate holds those cases).
func TestMigrateNamesPersistedDefaults(t *testing.T) {
	const n = 4
	s := newSwitchedWith(t, sandbox.Options{}, widgets(n), func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions[0].Schema = specSchema("hostPort")
		crd.Spec.Versions[1].Schema = specSchema("hostPort")
		added := crd.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"]
		added.Properties["added"] = apiextensionsv1.JSONSchemaProps{Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"on"`)}}
		crd.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"] = added
	})
	// The re-store says so before its first write: when the notice comes,
	// every object is still at its first generation.
	o := opts()
	var told []string
	o.Notify = func(msg string) {
		if !strings.Contains(msg, "defaults") {
			return
		}
		list, err := s.clients.Dynamic.Resource(s.gvr).Namespace(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		for _, it := range list.Items {
			if it.GetGeneration() != 1 {
				t.Errorf("%s is at generation %d when the defaults are announced: announced after a write", it.GetName(), it.GetGeneration())
			}
		}
		told = append(told, msg)
	}
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
	if err != nil || !res.Pruned {
		t.Fatalf("%+v %v", res, err)
	}
	if len(told) != 1 || !strings.Contains(told[0], `defaults (spec.added="on")`) || !slices.Equal(res.DefaultsPersisted, []string{"spec.added"}) {
		t.Errorf("notices %q, defaultsPersisted %v: want spec.added announced once before the pass", told, res.DefaultsPersisted)
	}
	if len(res.Proofs) != 1 || res.Proofs[0].By != results.ProofObjects {
		t.Errorf("proofs %+v: a default the schemas add is not proven by them", res.Proofs)
	}
	if res.Changed != 0 || len(res.Failures) != 0 || res.NeedsAttention(true) {
		t.Errorf("changed %d, failures %+v: a generation moved by the storage version's defaults alone needs no attention", res.Changed, res.Failures)
	}
	if want := []results.DefaultWritten{{Field: "spec.added", Default: `"on"`, Objects: n}}; !slices.Equal(res.DefaultsWritten, want) {
		t.Errorf("defaultsWritten %+v, want %+v", res.DefaultsWritten, want)
	}
	list, err := s.clients.Dynamic.Resource(s.gvr).Namespace(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range list.Items {
		if v, _, _ := unstructured.NestedString(it.Object, "spec", "added"); v != "on" || it.GetGeneration() != 2 {
			t.Errorf("%s: spec.added %q at generation %d: want the default persisted, the generation moved once", it.GetName(), v, it.GetGeneration())
		}
	}
}
