package migrate_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/convwebhook"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// legacyWidgets are objects of which every other one has spec.legacy.
func legacyWidgets(n int) []fixtures.Object {
	objs := make([]fixtures.Object, n)
	for i := range objs {
		objs[i] = widget(i)
		if i%2 == 0 {
			objs[i].Spec["legacy"] = fmt.Sprintf("keep-%d", i)
		}
	}
	return objs
}

// dropLegacyFromV1 gives v1beta1 a schema with spec.legacy and v1 one
// without it: with conversion None, v1 prunes it.
func dropLegacyFromV1(crd *apiextensionsv1.CustomResourceDefinition) {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	keep := true
	schemaWith := func(fields ...string) *apiextensionsv1.CustomResourceValidation {
		spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
		for _, f := range fields {
			spec.Properties[f] = str
		}
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec, "status": {Type: "object", XPreserveUnknownFields: &keep}}}}
	}
	crd.Spec.Versions[0].Schema = schemaWith("hostPort", "legacy")
	crd.Spec.Versions[1].Schema = schemaWith("hostPort")
}

// legacyAtV1beta1 counts the objects that, read at v1beta1, still hold
// spec.legacy.
func (s *switched) legacyAtV1beta1(t *testing.T) int {
	t.Helper()
	list, err := s.fx.Dynamic.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range list.Items {
		if _, ok, _ := unstructured.NestedString(o.Object, "spec", "legacy"); ok {
			n++
		}
	}
	return n
}

// The most common reason for a new version is a field dropped or renamed.
// Re-storing an object stored at the old version makes old→new→old
// permanent: migrate must see the loss on each object before it writes it,
// whatever the conversion, and re-store none that loses data. A record on
// the CRD, even one computed exactly as the plugin computes its own, proves
// nothing about the objects written: anyone who may patch the CRD writes it.
func TestMigrateReStoresNothingThatOldToNewLoses(t *testing.T) {
	const n = 20
	for _, tc := range []struct {
		name   string
		edit   func(*apiextensionsv1.CustomResourceDefinition, *convwebhook.Webhook)
		record bool
	}{
		{"conversion None, v1's schema lacks the field", func(crd *apiextensionsv1.CustomResourceDefinition, _ *convwebhook.Webhook) { dropLegacyFromV1(crd) }, false},
		// v1→v1beta1→v1 is lossless here: only the other direction sees it.
		{"a webhook that does not carry the field into v1", func(crd *apiextensionsv1.CustomResourceDefinition, wh *convwebhook.Webhook) {
			crd.Spec.Conversion = wh.Conversion()
		}, false},
		{"a hand-written record of a passed check", func(crd *apiextensionsv1.CustomResourceDefinition, _ *convwebhook.Webhook) { dropLegacyFromV1(crd) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wh, err := convwebhook.Start(convwebhook.DropsLegacy)
			if err != nil {
				t.Fatal(err)
			}
			defer wh.Stop()
			s := newSwitchedWith(t, sandbox.Options{}, legacyWidgets(n), func(crd *apiextensionsv1.CustomResourceDefinition) { tc.edit(crd, wh) })
			if tc.record {
				crd, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				rec := lifecycle.Verification{From: "v1", Objects: n, Fingerprint: stages.Fingerprint(crd, "v1", "v1beta1"), Generation: crd.Generation}
				key, val := stages.VerifiedAnnotation(rec, "v1beta1")
				patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, val)
				if _, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Patch(t.Context(), s.crd, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			before := s.stored(t)
			if before["example.com/v1beta1"] != n {
				t.Fatalf("setup: %v", before)
			}

			res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
			if err != nil {
				t.Fatal(err)
			}
			if res.Rewritten != n/2 || res.Lost != n/2 || res.Pruned || !res.NeedsAttention(true) {
				t.Fatalf("result %+v: want the %d objects without the field re-stored, the %d with it not, nothing pruned", res, n/2, n/2)
			}
			if len(res.Proofs) != 1 || res.Proofs[0].By != results.ProofObjects || len(res.Proofs[0].Losses) != n/2 || res.Proofs[0].Objects != n {
				t.Fatalf("proofs %+v: want %d of %d objects losing data, found by checking each", res.Proofs, n/2, n)
			}
			for _, l := range res.Proofs[0].Losses {
				if len(l.Diffs) != 1 || l.Diffs[0].Path != "spec.legacy" || l.Diffs[0].After != "<absent>" || l.Version != "v1beta1" {
					t.Errorf("loss %+v: want spec.legacy gone at v1beta1", l)
				}
			}
			if after := s.stored(t); after["example.com/v1beta1"] != n/2 || after["example.com/v1"] != n/2 {
				t.Errorf("etcd: %v → %v: want the objects holding spec.legacy left at v1beta1", before, after)
			}
			if got := s.legacyAtV1beta1(t); got != n/2 {
				t.Errorf("%d objects hold spec.legacy at v1beta1, want %d", got, n/2)
			}
			crd, _ := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
			if fmt.Sprint(crd.Status.StoredVersions) != "[v1beta1 v1]" {
				t.Errorf("storedVersions = %v", crd.Status.StoredVersions)
			}

			// Going ahead is the user's call, never the default: then the
			// loss the check showed is what happens.
			o := opts()
			o.AcceptLoss = true
			res, err = migration.Migrate(t.Context(), s.clients, s.crd, o)
			if err != nil || !res.Pruned || res.Proofs[0].By != results.ProofWaived {
				t.Fatalf("--accept-loss: %+v %v", res, err)
			}
			if got := s.legacyAtV1beta1(t); got != 0 {
				t.Errorf("after --accept-loss %d objects still hold spec.legacy", got)
			}
		})
	}
}

// A PATCH that entered the API server while v1beta1 was storage, stalled in
// a slow conversion webhook across the switch, lands at v1beta1 after the
// re-store pass. Pruning before the switch grace runs out leaves a key at
// a version storedVersions no longer names; waiting it out and re-storing
// once more does not.
func TestMigrateOutwaitsAWriteInFlightAcrossTheSwitch(t *testing.T) {
	const stalled = "w-0007"
	for _, tc := range []struct {
		name    string
		grace   time.Duration
		stall   time.Duration // at most; released earlier
		corrupt bool
	}{
		// Shows the scenario is real: the prune races the stalled write,
		// released once migrate has returned.
		{"no grace", -1, 25 * time.Second, true},
		// Released when the grace's wait begins, and in any case before
		// the grace is over.
		{"a grace longer than the stall", 8 * time.Second, 5 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wh, err := convwebhook.Start(convwebhook.Correct)
			if err != nil {
				t.Fatal(err)
			}
			defer wh.Stop()
			objs := make([]fixtures.Object, 20)
			for i := range objs {
				objs[i] = widget(i)
			}
			s := newUnswitched(t, sandbox.Options{}, objs, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Conversion = wh.Conversion() })
			var ns string
			for _, o := range objs {
				if o.Name == stalled {
					ns = o.Namespace
				}
			}
			started, release := wh.Stall(stalled, tc.stall)
			defer release()
			landed := make(chan error, 1)
			t0 := time.Now()
			go func() {
				defer func() { t.Logf("PATCH returned after %s", time.Since(t0)) }()
				_, err := s.fx.Dynamic.Resource(s.gvr).Namespace(ns).Patch(context.Background(), stalled, types.MergePatchType,
					[]byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{})
				landed <- err
			}()
			select {
			case <-started:
			case <-time.After(30 * time.Second):
				t.Fatal("the PATCH never reached the webhook")
			}
			if err := s.fx.SwitchStorage(t.Context(), s.crd, "v1", true); err != nil {
				t.Fatal(err)
			}
			o := opts()
			o.SwitchGrace = tc.grace
			var waited []string
			o.Notify = func(m string) {
				waited = append(waited, m)
				release()
			}
			t.Logf("switched after %s", time.Since(t0))
			res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
			t.Logf("migrated after %s: %+v", time.Since(t0), res)
			if err != nil || !res.Pruned {
				t.Fatalf("migrate: %+v %v", res, err)
			}
			release()
			if err := <-landed; err != nil {
				t.Fatalf("the stalled PATCH: %v", err)
			}
			bad, err := s.sb.CheckStoredVersions(t.Context(), s.crd, "example.com", "widgets")
			if err != nil {
				t.Fatal(err)
			}
			if tc.corrupt {
				if len(bad) == 0 {
					t.Fatal("the stalled write did not land at v1beta1 after the prune: the scenario is not reproduced")
				}
				// Put it right, so the end-of-test check of etcd holds.
				if err := s.fx.SetStoredVersions(t.Context(), s.crd, "v1beta1", "v1"); err != nil {
					t.Fatal(err)
				}
				return
			}
			// The second pass, after the grace, checks and re-stores the
			// stalled object too.
			if len(waited) != 1 || !strings.Contains(waited[0], "re-storing once more") {
				t.Errorf("want the prune to wait out the grace first: notes %q", waited)
			}
			if res.Settle == nil || !res.Settle.Complete() {
				t.Errorf("settle %+v: want a complete second pass", res.Settle)
			}
			if len(bad) > 0 {
				t.Errorf("etcd: %v", bad)
			}
		})
	}
}

// An object deleted between the listing and its check was not checked: a
// record of the check may only claim the objects it did check.
func TestVerifyCountsSkippedObjectsApart(t *testing.T) {
	s := newSwitched(t, sandbox.Options{}, 10, nil)
	crd, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleted := false
	opts := verify.Options{Versions: []string{"v1beta1"}, Concurrency: 1, PageSize: 50, Progress: func(_ string, done, total int64) {
		if !deleted {
			deleted = true
			if err := s.fx.Dynamic.Resource(s.gvr).Namespace("ns-0").Delete(context.Background(), "w-0009", metav1.DeleteOptions{}); err != nil {
				t.Errorf("delete: %v", err)
			}
		}
	}}
	res, err := verify.Verify(t.Context(), s.clients.Clients, crd, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Objects != 9 || res.Skipped != 1 || !res.Passed() || res.Verification().Objects != 9 {
		t.Fatalf("objects %d, skipped %d, passed %v: want 9 checked and 1 skipped", res.Objects, res.Skipped, res.Passed())
	}
	if strings.Join(res.RoundTrips, ",") != "v1beta1→v1→v1beta1" {
		t.Errorf("round trips %v", res.RoundTrips)
	}
}

// Progress counts objects, each version's pass apart: 10 objects checked
// at two versions are 10/10 twice, not 20 checks shown as objects.
func TestVerifyProgressCountsObjectsPerVersion(t *testing.T) {
	s := newSwitched(t, sandbox.Options{}, 10, nil)
	crd, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	last := map[string][2]int64{}
	var tasks []string
	opts := verify.Options{Versions: []string{"v1beta1", "v1"}, Progress: func(task string, done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		if _, seen := last[task]; !seen {
			tasks = append(tasks, task)
		}
		if done >= last[task][0] {
			last[task] = [2]int64{done, total}
		}
	}}
	if _, err := verify.Verify(t.Context(), s.clients.Clients, crd, opts); err != nil {
		t.Fatal(err)
	}
	want := []string{"verify v1beta1→v1→v1beta1", "verify v1 (the storage version: no conversion)"}
	if !slices.Equal(tasks, want) {
		t.Fatalf("tasks %q, want %q", tasks, want)
	}
	for _, task := range want {
		if got := last[task]; got != [2]int64{10, 10} {
			t.Errorf("%s: last progress %d/%d, want 10/10 objects", task, got[0], got[1])
		}
	}
}

// An object near etcd's size limit whose encoding at the new storage
// version is larger: the API server retries the re-store without its
// managedFields and answers success. The answer shows it; the run must
// say so rather than count the object re-stored as it was.
func TestMigrateReportsManagedFieldsDroppedNearTheSizeLimit(t *testing.T) {
	wh, err := convwebhook.Start(convwebhook.Pads)
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Stop()
	// About 1.2 MiB at v1beta1, a quarter of it the managedFields entry
	// that owns every key; v1 adds 300 KiB and crosses etcd's 1.5 MiB.
	spec := map[string]any{}
	for i := range 20000 {
		spec[fmt.Sprintf("k%05d", i)] = strings.Repeat("v", 40)
	}
	big := fixtures.Object{Namespace: "ns-0", Name: "big", Spec: spec}
	s := newSwitchedWith(t, sandbox.Options{}, []fixtures.Object{big, widget(1)}, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Conversion = wh.Conversion() })
	listed, err := s.clients.Metadata.Resource(s.gvr).Namespace("ns-0").Get(t.Context(), "big", metav1.GetOptions{})
	if err != nil || len(listed.ManagedFields) == 0 {
		t.Fatalf("setup: %v, managedFields %d", err, len(listed.ManagedFields))
	}

	res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed != 1 || !res.NeedsAttention(true) || len(res.Failures) != 1 || res.Failures[0].Name != "big" ||
		res.Failures[0].Reason != results.ReasonChangedByWrite || !strings.Contains(res.Failures[0].Message, "dropped managedFields") {
		t.Fatalf("result %+v: want the big object reported with its managedFields dropped", res)
	}
	after, err := s.clients.Metadata.Resource(s.gvr).Namespace("ns-0").Get(t.Context(), "big", metav1.GetOptions{})
	if err != nil || len(after.ManagedFields) != 0 {
		t.Fatalf("the scenario is not reproduced: managedFields after %d, %v", len(after.ManagedFields), err)
	}
}

// A record covers the objects as they were when it was made. The bridge
// check of v1 (v1→v1beta1→v1, made while v1beta1 was storage) says nothing
// of objects written at v1 after a switch to v1 and back: with v1beta1
// storage again, re-storing them at v1beta1 is checked object by object,
// and one whose field v1beta1 lacks is not re-stored.
func TestMigrateDoesNotTrustARecordOlderThanASwitch(t *testing.T) {
	s := newUnswitched(t, sandbox.Options{}, []fixtures.Object{widget(0), widget(1)}, func(crd *apiextensionsv1.CustomResourceDefinition) {
		keep := true
		schemaWith := func(fields ...string) *apiextensionsv1.CustomResourceValidation {
			spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
			for _, f := range fields {
				spec.Properties[f] = apiextensionsv1.JSONSchemaProps{Type: "string"}
			}
			return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec, "status": {Type: "object", XPreserveUnknownFields: &keep}}}}
		}
		crd.Spec.Versions[0].Schema = schemaWith("hostPort")
		crd.Spec.Versions[1].Schema = schemaWith("hostPort", "extra")
	})
	crds := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The bridge record: every object then round-tripped v1→v1beta1→v1.
	if err := verify.RecordVerification(t.Context(), s.fx.CRDs, crd, "v1", lifecycle.Verification{From: "v1beta1", Objects: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.fx.SwitchStorage(t.Context(), s.crd, "v1", false); err != nil {
		t.Fatal(err)
	}
	switched, err := crds.Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fixtures.WaitStorageInEffect(t.Context(), s.clients.Discovery, switched, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	// Discovery shows the switch a moment before every handler of the
	// server stores by it: late is created anew until etcd holds it at v1,
	// spec.extra kept (the test's premise, not the plugin's).
	late := fixtures.Object{Namespace: "ns-0", Name: "late", Spec: map[string]any{"hostPort": "h:1", "extra": "only-in-v1"}}
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := s.fx.Dynamic.Resource(s.gvr).Namespace("ns-0").Delete(ctx, "late", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		if err := s.fx.CreateObjects(ctx, s.gvr, "Widget", []fixtures.Object{late}); err != nil {
			return false, err
		}
		return s.etcdHolding(t, "extra") == 1, nil
	})
	if err != nil {
		t.Fatalf("late is not stored at v1 with spec.extra: %v", err)
	}
	if err := s.fx.SwitchStorage(t.Context(), s.crd, "v1beta1", false); err != nil {
		t.Fatal(err)
	}
	before := s.stored(t)

	res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	if err != nil {
		t.Fatal(err)
	}
	if res.Lost != 1 || res.Rewritten != 0 || res.Pruned || len(res.Proofs) != 1 || res.Proofs[0].By != results.ProofObjects {
		t.Fatalf("result %+v: want the objects of v1 checked, not the old record trusted, and late not re-stored", res)
	}
	if l := res.Proofs[0].Losses; len(l) != 1 || l[0].Name != "late" || l[0].Diffs[0].Path != "spec.extra" {
		t.Errorf("losses %+v: want late's spec.extra", l)
	}
	if after := s.stored(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("etcd changed: %v → %v", before, after)
	}
}
