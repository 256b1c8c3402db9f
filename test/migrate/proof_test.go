package migrate_test

import (
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/convwebhook"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

var v1beta1 = schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}

func widgets(n int) []fixtures.Object {
	objs := make([]fixtures.Object, n)
	for i := range objs {
		objs[i] = widget(i)
	}
	return objs
}

// promote takes one step of v1, failing the test if it is refused.
// sharedMetric lets the step to blocked through the API server's count of
// requests: the in-process API servers of one test binary share one
// metrics registry, so another test's requests to widgets at a deprecated
// version show in this one's. The gate itself is tested end to end
// (test/e2e/blocked_test.go), one client at a time.
var sharedMetric = []string{usage.Requests}

func (s *switched) promote(t *testing.T, to lifecycle.Stage) *results.PromoteResult {
	t.Helper()
	res, err := migration.Promote(t.Context(), s.clients, s.crd, migration.PromoteOptions{Version: "v1", To: to, DespiteClients: sharedMetric})
	if err != nil {
		t.Fatalf("promote v1 --to %s: %v", to, err)
	}
	return res
}

// storedAt is the apiVersion etcd holds the object at.
func (s *switched) storedAt(t *testing.T, ns, name string) string {
	t.Helper()
	v, err := s.sb.StoredAPIVersion(t.Context(), "example.com", "widgets", ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A write that entered the API server while v1beta1 was storage lands
// there with a field v1 drops, after promote's switch checked every object
// and recorded the pass. The record was true of the objects it saw; the
// object written after it was never checked. migrate checks each object as
// it re-stores it, so it finds the field and leaves the object as it is.
func TestMigrateChecksTheObjectAWriteLandedOnAfterTheSwitchCheck(t *testing.T) {
	s := newUnswitched(t, sandbox.Options{}, widgets(10), dropLegacyFromV1)
	s.promote(t, lifecycle.StageBridge)
	late := startSlowPatch(t, s.sb.RestConfig(), v1beta1, "ns-1", "w-0001", []byte(`{"spec":{"legacy":"written-late"}}`))
	sw := s.promote(t, lifecycle.StageDeprecated)
	if sw.Switch == nil || !sw.Switch.Holds() {
		t.Fatalf("setup: the switch check %+v should pass on objects without spec.legacy", sw.Switch)
	}
	late.land(t)
	crd, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stages.ValidVerification(crd, "v1beta1"); !ok {
		t.Fatal("setup: promote recorded no passed check of v1beta1")
	}
	if got := s.storedAt(t, "ns-1", "w-0001"); got != "example.com/v1beta1" || s.legacyAtV1beta1(t) != 1 {
		t.Fatalf("setup: the late write landed at %s (%d objects with spec.legacy): want v1beta1, 1", got, s.legacyAtV1beta1(t))
	}

	res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	if err != nil {
		t.Fatal(err)
	}
	if res.Pruned || res.Lost != 1 || len(res.Proofs) != 1 || res.Proofs[0].By != results.ProofObjects ||
		len(res.Proofs[0].Losses) != 1 || res.Proofs[0].Losses[0].Name != "w-0001" {
		t.Fatalf("result %+v, proofs %+v: want w-0001 found losing spec.legacy and left, nothing pruned", res, res.Proofs)
	}
	if got := s.storedAt(t, "ns-1", "w-0001"); got != "example.com/v1beta1" || s.legacyAtV1beta1(t) != 1 {
		t.Errorf("w-0001 is at %s with %d objects holding spec.legacy: the late write's field was destroyed", got, s.legacyAtV1beta1(t))
	}
}

// The converter is redeployed between the steps behind the same Service
// and caBundle, so the CRD, and every record computed from it, is the same:
// the new build drops a field on old→new. Checked as it is written, each
// object goes through the webhook that will write it.
func TestMigrateChecksThroughTheWebhookThatWrites(t *testing.T) {
	wh, err := convwebhook.Start(convwebhook.Correct)
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Stop()
	const n = 10
	s := newUnswitched(t, sandbox.Options{}, legacyWidgets(n), func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Conversion = wh.Conversion() })
	s.promote(t, lifecycle.StageBridge)
	if sw := s.promote(t, lifecycle.StageDeprecated); sw.Switch == nil || !sw.Switch.Holds() {
		t.Fatalf("setup: the switch check %+v should pass through the correct webhook", sw.Switch)
	}
	wh.SetMode(convwebhook.DropsLegacy)

	res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	if err != nil {
		t.Fatal(err)
	}
	if res.Pruned || res.Lost != n/2 || res.Rewritten != n/2 {
		t.Fatalf("result %+v: want the %d objects with spec.legacy left, the rest re-stored, nothing pruned", res, n/2)
	}
	if got := s.legacyAtV1beta1(t); got != n/2 {
		t.Errorf("%d objects hold spec.legacy at v1beta1, want %d", got, n/2)
	}
	if c := s.stored(t); c["example.com/v1beta1"] != n/2 {
		t.Errorf("etcd: %v", c)
	}
}

// A write in flight across a storage switch the schemas prove lossless,
// then an update that changes nothing but the CRD's managedFields times,
// to 2020. The switch must not look years old: migrate waits out the grace
// from when it first saw the switch, the late write lands meanwhile, and
// the second pass re-stores it before the prune.
func TestMigrateGraceIsNotEndedByManagedFieldsTimes(t *testing.T) {
	s := newUnswitched(t, sandbox.Options{}, widgets(10), func(*apiextensionsv1.CustomResourceDefinition) {})
	late := startSlowPatch(t, s.sb.RestConfig(), v1beta1, "ns-2", "w-0005", []byte(`{"metadata":{"labels":{"late":"yes"}}}`))
	if err := s.fx.SwitchStorage(t.Context(), s.crd, "v1", false); err != nil {
		t.Fatal(err)
	}
	crds := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	for i := range crd.ManagedFields {
		crd.ManagedFields[i].Time = &old
	}
	if crd, err = crds.Update(t.Context(), crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, mf := range crd.ManagedFields {
		if mf.Time != nil && mf.Time.Year() != 2020 {
			t.Fatalf("setup: the API server did not keep the times sent: %s at %s", mf.Manager, mf.Time)
		}
	}

	o := opts()
	o.SwitchGrace = 3 * time.Second
	landed := false
	var notes []string
	o.Notify = func(m string) {
		notes = append(notes, m)
		if !landed {
			landed = true
			late.land(t)
		}
	}
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
	if !landed {
		late.land(t)
	}
	if err != nil {
		t.Fatal(err)
	}
	bad, err := s.sb.CheckStoredVersions(t.Context(), s.crd, "example.com", "widgets")
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 || len(notes) != 1 || res.Settle == nil || !res.Pruned {
		t.Fatalf("etcd %v, notes %q, settle %+v, pruned %v: want the grace waited out, the late write re-stored, then the prune", bad, notes, res.Settle, res.Pruned)
	}
	if got := s.storedAt(t, "ns-2", "w-0005"); got != "example.com/v1" {
		t.Errorf("w-0005 at %s", got)
	}
	// Put right for the end-of-test check if it failed above.
	if len(bad) > 0 {
		_ = s.fx.SetStoredVersions(t.Context(), s.crd, "v1beta1", "v1")
	}
}

// Nothing can be stored at another version when storedVersions names only
// the storage version: there is no grace to wait out, whatever wrote the
// CRD last (an annotation, an operator's own start-up call).
func TestMigrateDoesNotWaitWhenNothingIsPending(t *testing.T) {
	s := newSwitched(t, sandbox.Options{}, 10, nil)
	if res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts()); err != nil || !res.Pruned {
		t.Fatalf("setup: %+v %v", res, err)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"touched":%q}}}`, time.Now())
	if _, err := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Patch(t.Context(), s.crd, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	o := opts()
	o.SwitchGrace = 0 // the default, two minutes
	o.CleanManagedFields = true
	var notes []string
	o.Notify = func(m string) { notes = append(notes, m) }
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
	if err != nil || res.PruneReason != results.PruneNothingToPrune || res.Settle != nil || len(notes) != 0 {
		t.Fatalf("result %+v %v, notes %q: want nothing to prune and no wait", res, err, notes)
	}
}
