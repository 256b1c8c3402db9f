package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/convwebhook"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// switched is a CRD whose objects were written at v1beta1 before its
// storage version was switched to v1: a migration pending.
type switched struct {
	sb      *sandbox.Sandbox
	fx      fixtures.Clients
	clients migration.Clients
	crd     string
	gvr     schema.GroupVersionResource
}

func newSwitched(t *testing.T, opts sandbox.Options, n int, conv *apiextensionsv1.CustomResourceConversion) *switched {
	t.Helper()
	objs := make([]fixtures.Object, n)
	for i := range objs {
		objs[i] = widget(i)
	}
	return newSwitchedWith(t, opts, objs, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Conversion = conv })
}

func widget(i int) fixtures.Object {
	return fixtures.Object{Namespace: fmt.Sprintf("ns-%d", i%3), Name: fmt.Sprintf("w-%04d", i),
		Labels: map[string]string{"i": fmt.Sprint(i)}, Spec: map[string]any{"hostPort": fmt.Sprintf("h%d:%d", i, i)},
		Status: map[string]any{"ready": i%2 == 0}}
}

// newSwitchedWith creates the objects at v1beta1, edit's CRD, then switches
// storage to v1.
func newSwitchedWith(t *testing.T, opts sandbox.Options, objs []fixtures.Object, edit func(*apiextensionsv1.CustomResourceDefinition)) *switched {
	t.Helper()
	s := newUnswitched(t, opts, objs, edit)
	if err := s.fx.SwitchStorage(t.Context(), s.crd, "v1", true); err != nil {
		t.Fatal(err)
	}
	return s
}

// newUnswitched creates the objects at v1beta1, the storage version, with
// v1 served beside it. At the end of the test, etcd must show no object
// stored at a version that storedVersions lacks, whatever the test did.
func newUnswitched(t *testing.T, opts sandbox.Options, objs []fixtures.Object, edit func(*apiextensionsv1.CustomResourceDefinition)) *switched {
	t.Helper()
	crd := fixtures.CRD("example.com", "Widget", "widgets", apiextensionsv1.NamespaceScoped, true,
		fixtures.Version{Name: "v1beta1", Served: true, Storage: true},
		fixtures.Version{Name: "v1", Served: true})
	edit(crd)
	return newWidgets(t, opts, crd, objs)
}

// newWidgets creates crd (example.com's widgets) and the objects at its
// storage version, with the same end-of-test check of etcd.
func newWidgets(t *testing.T, opts sandbox.Options, crd *apiextensionsv1.CustomResourceDefinition, objs []fixtures.Object) *switched {
	t.Helper()
	sb := sandbox.StartT(t, opts)
	cfg := sb.RestConfig()
	cfg.QPS, cfg.Burst = -1, 0
	fx, err := fixtures.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fx.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	old := schema.GroupVersionResource{Group: "example.com", Version: stages.StorageVersion(crd), Resource: "widgets"}
	if err := fx.CreateObjects(t.Context(), old, "Widget", objs); err != nil {
		t.Fatal(err)
	}
	s := &switched{sb: sb, fx: fx, crd: crd.Name, gvr: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}}
	s.clients = migration.Clients{Clients: cluster.Clients{CRDs: fx.CRDs, Dynamic: fx.Dynamic}}
	if s.clients.Metadata, err = metadata.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if s.clients.Discovery, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bad, err := sb.CheckStoredVersions(context.Background(), s.crd, "example.com", "widgets")
		if err != nil {
			t.Errorf("checking etcd against storedVersions: %v", err)
		}
		for _, b := range bad {
			t.Errorf("etcd at the end: %s", b)
		}
	})
	return s
}

func (s *switched) stored(t *testing.T) map[string]int {
	t.Helper()
	counts, err := s.sb.StoredAPIVersions(t.Context(), "example.com", "widgets")
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

// contents snapshots what a migration must never change.
func (s *switched) contents(t *testing.T) map[string]string {
	t.Helper()
	list, err := s.fx.Dynamic.Resource(s.gvr).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range list.Items {
		spec, _, _ := unstructured.NestedMap(o.Object, "spec")
		status, _, _ := unstructured.NestedMap(o.Object, "status")
		out[o.GetNamespace()+"/"+o.GetName()] = fmt.Sprint(spec, status, o.GetLabels(), o.GetAnnotations())
	}
	return out
}

// opts are the options of most tests: no switch grace, since no write is
// in flight across their switches (the grace has tests of its own).
func opts() migration.Options {
	return migration.Options{Restore: migration.RestoreOptions{Concurrency: 8, PageSize: 50}, SwitchTimeout: 30 * time.Second, SwitchGrace: migration.NoSwitchGrace}
}

func TestMigrateReStoresEveryObjectAndPrunes(t *testing.T) {
	const n = 300
	s := newSwitched(t, sandbox.Options{}, n, nil)
	before := s.contents(t)
	if c := s.stored(t); c["example.com/v1beta1"] == 0 {
		t.Fatalf("setup: nothing stored at v1beta1: %v", c)
	}

	res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete() || res.Listed != n || res.Rewritten+res.Unchanged != n || !res.Pruned {
		t.Fatalf("result %+v", res)
	}
	// Both versions keep everything (conversion None): no object needs a check.
	if len(res.Proofs) != 1 || res.Proofs[0].By != results.ProofSchema {
		t.Fatalf("proofs %+v, want one by schema", res.Proofs)
	}
	if c := s.stored(t); len(c) != 1 || c["example.com/v1"] != n {
		t.Fatalf("etcd after migrate: %v, want all %d at example.com/v1", c, n)
	}
	after := s.contents(t)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed: %s -> %s", k, v, after[k])
		}
	}
	crd, _ := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if fmt.Sprint(crd.Status.StoredVersions) != "[v1]" {
		t.Errorf("storedVersions = %v, want [v1]", crd.Status.StoredVersions)
	}

	// A second pass finds every object already at v1: the proof prune uses.
	again, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	if err != nil {
		t.Fatal(err)
	}
	if again.Rewritten != 0 || again.Unchanged != n || again.PruneReason != results.PruneNothingToPrune {
		t.Fatalf("second pass %+v", again)
	}
}

func TestMigratePruneFalseLeavesStoredVersions(t *testing.T) {
	s := newSwitched(t, sandbox.Options{}, 20, nil)
	o := opts()
	o.KeepStoredVersions = true
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
	if err != nil || res.Pruned || res.PruneSkipped != "not asked to prune" {
		t.Fatalf("res %+v err %v", res, err)
	}
	crd, _ := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if fmt.Sprint(crd.Status.StoredVersions) != "[v1beta1 v1]" {
		t.Errorf("storedVersions = %v", crd.Status.StoredVersions)
	}
}

// The CRD is edited while objects are re-stored: prune must not happen.
func TestMigrateDoesNotPruneWhenTheCRDChanged(t *testing.T) {
	s := newSwitched(t, sandbox.Options{}, 50, nil)
	o := opts()
	var once sync.Once
	o.Restore.Progress = func(done, total int64) {
		once.Do(func() {
			crds := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions()
			crd, err := crds.Get(context.Background(), s.crd, metav1.GetOptions{})
			if err == nil {
				crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Description = "edited meanwhile"
				_, err = crds.Update(context.Background(), crd, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Errorf("concurrent edit: %v", err)
			}
		})
	}
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pruned || !res.NeedsAttention(true) || !strings.Contains(res.PruneSkipped, "the CRD was changed during the migration (generation") {
		t.Fatalf("result %+v", res)
	}
}

// An expired continue token (etcd compacted between two pages, watch cache
// off) must not skip any object.
func TestMigrateSurvivesExpiredContinueToken(t *testing.T) {
	const n = 120
	s := newSwitched(t, sandbox.Options{DisableWatchCache: true}, n, nil)
	o := opts()
	o.Restore.PageSize, o.Restore.Concurrency = 10, 1
	var once sync.Once
	o.Restore.Progress = func(done, total int64) {
		if done == 5 {
			once.Do(func() {
				if err := s.sb.Compact(context.Background()); err != nil {
					t.Errorf("compact: %v", err)
				}
			})
		}
	}
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete() || !res.Pruned || res.ExpiredContinues == 0 {
		t.Fatalf("result %+v: want complete, pruned, and a continue token that expired", res)
	}
	if c := s.stored(t); len(c) != 1 || c["example.com/v1"] != n {
		t.Fatalf("etcd after migrate across a compaction: %v, want all %d at v1", c, n)
	}
}

// With the conversion webhook down nothing is written and nothing pruned;
// once it is back a rerun completes.
func TestMigrateWithConversionWebhookDown(t *testing.T) {
	wh, err := convwebhook.Start(convwebhook.Correct)
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Stop()
	s := newSwitched(t, sandbox.Options{}, 30, wh.Conversion())
	before := s.stored(t)

	wh.SetMode(convwebhook.Failing)
	if _, err := migration.Migrate(t.Context(), s.clients, s.crd, opts()); !errors.Is(err, results.ErrWebhookUnavailable) || !strings.Contains(err.Error(), "widgets.example.com") {
		t.Fatalf("migrate with the webhook down: %v", err)
	}
	if after := s.stored(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("written while the webhook was down: %v -> %v", before, after)
	}

	wh.SetMode(convwebhook.Correct)
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	if err != nil || !res.Complete() || !res.Pruned {
		t.Fatalf("rerun: %+v %v", res, err)
	}
	if c := s.stored(t); len(c) != 1 || c["example.com/v1"] != 30 {
		t.Fatalf("etcd after rerun: %v", c)
	}
}

// The cluster's own migrator reports StorageMigrating=True on the CRD:
// migrate refuses and writes nothing, unless --force; even then it leaves
// storedVersions to be pruned once the cluster's migrator is done.
func TestMigrateRefusesWhileTheClusterMigrates(t *testing.T) {
	const n = 20
	s := newSwitched(t, sandbox.Options{}, n, nil)
	crds := s.fx.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crd.Status.Conditions = append(crd.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.StorageMigrating, Status: apiextensionsv1.ConditionTrue, Reason: "Migrating",
		Message: "the storage version migrator is re-storing objects", LastTransitionTime: metav1.Now()})
	if _, err := crds.UpdateStatus(t.Context(), crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := s.stored(t)

	res, err := migration.Migrate(t.Context(), s.clients, s.crd, opts())
	if err == nil || !strings.Contains(err.Error(), "StorageMigrating=True") || res != nil {
		t.Fatalf("migrate while the cluster migrates: %+v %v", res, err)
	}
	if after := s.stored(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("refused run wrote: %v -> %v", before, after)
	}

	o := opts()
	o.Force = true
	res, err = migration.Migrate(t.Context(), s.clients, s.crd, o)
	if err != nil || !res.Complete() || res.Rewritten != n || res.Pruned || !strings.Contains(res.PruneSkipped, "StorageMigrating=True") {
		t.Fatalf("--force: %+v %v", res, err)
	}
	if c := s.stored(t); len(c) != 1 || c["example.com/v1"] != n {
		t.Fatalf("etcd after --force: %v", c)
	}
}

// --gentle paces the writes (from 20 a second, growing only while the
// server's tail latency holds: the bench measures the pace) and re-stores
// every object all the same.
func TestMigrateGentleReStoresEveryObject(t *testing.T) {
	const n = 150
	s := newSwitched(t, sandbox.Options{}, n, nil)
	o := opts()
	o.Restore.Gentle = true
	res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete() || res.Rewritten+res.Unchanged != n || !res.Pruned {
		t.Fatalf("result %+v", res)
	}
	if c := s.stored(t); len(c) != 1 || c["example.com/v1"] != n {
		t.Fatalf("etcd after migrate --gentle: %v, want all %d at example.com/v1", c, n)
	}
	if c := res.Concurrency; c == nil || !c.Gentle || c.Rate < 1 || c.PeakRate < 20 {
		t.Fatalf("concurrency %+v, want gentle with its pace", c)
	}
}

// A DryRun the library does not know (metav1's "All", a typo) is refused
// before anything is sent: it is unclear whether the caller meant a write.
func TestMigrateRefusesADryRunItDoesNotKnow(t *testing.T) {
	const n = 5
	s := newSwitched(t, sandbox.Options{}, n, nil)
	crd, err := s.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), s.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []migration.DryRun{"All", "bogus"} {
		o := opts()
		o.Restore.DryRun = d
		res, err := migration.Migrate(t.Context(), s.clients, s.crd, o)
		if !errors.Is(err, migration.ErrInvalidDryRun) {
			t.Errorf("DryRun %q: %+v, %v; want ErrInvalidDryRun", d, res, err)
		}
		if res, err := migration.PruneUnproven(t.Context(), s.clients, crd.Name, o); !errors.Is(err, migration.ErrInvalidDryRun) {
			t.Errorf("PruneUnproven with DryRun %q: %+v, %v; want ErrInvalidDryRun", d, res, err)
		}
	}
	if c := s.stored(t); c["example.com/v1beta1"] != n {
		t.Errorf("etcd after refused runs: %v, want all %d still at example.com/v1beta1", c, n)
	}
}
