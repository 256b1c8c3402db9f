package controller_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/kubectl-crdversion/kubectl-crdversion/controller/crdmigrator"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
)

// options migrate the test's CRD. The storage switch here is the test's
// own, with nothing else writing: the switch grace is tested in
// test/migrate.
func options(w widgets) crdmigrator.Options {
	return crdmigrator.Options{
		CRDs:       []string{w.name()},
		Migrate:    migrate.Options{SwitchGrace: migrate.NoSwitchGrace},
		MinBackoff: 200 * time.Millisecond,
		DeferFor:   200 * time.Millisecond,
	}
}

// Two replicas of an operator, one leading: after its release switches
// the storage version, the leader re-stores every object at v1 and prunes
// storedVersions; the other does nothing.
func TestLeaderMigratesAndPrunes(t *testing.T) {
	e := newEnv(t)
	w := e.install("leader", func(*apiextensionsv1.CustomResourceDefinition) {}, objects(15, "leader-a", "leader-b"))
	a := e.startReplica("a", "leader-test", options(w))
	b := e.startReplica("b", "leader-test", options(w))
	leader, others := waitLeader(t, a, b)
	// At start the CRD has nothing pending: the leader decides so before
	// the switch, so the migration below is the switch's.
	waitLine(t, leader, "decided", w.name(), "holds only the storage version v1beta1")

	e.switchStorage(w)
	e.waitStoredVersions(w, "v1")
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 30}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v, want %v", got, want)
	}
	ev := e.waitEvent(w, "Migrated")
	for _, word := range []string{"30 objects re-stored at v1", "storedVersions [v1beta1 v1] → [v1]"} {
		if !strings.Contains(ev.Note, word) {
			t.Errorf("the Migrated Event %q lacks %q", ev.Note, word)
		}
	}
	if got := leader.log.with("queued", w.name(), "storage version v1beta1 → v1"); len(got) != 1 {
		t.Errorf("the leader queued the CRD for its switch %d times, want once; its log:\n%s", len(got), strings.Join(leader.log.with(w.name()), "\n"))
	}
	for _, r := range others {
		if r.elected() {
			t.Errorf("replica %s leads too", r.name)
		}
		if got := r.log.with(w.name()); len(got) > 0 {
			t.Errorf("replica %s, not leading, acted on the CRD:\n%s", r.name, strings.Join(got, "\n"))
		}
	}
	if got := metric(t, "crdversion_migration_objects_restored_total", w); got != 30 {
		t.Errorf("objects re-stored metric %v, want 30", got)
	}
	if got := metric(t, "crdversion_migration_last_success_timestamp_seconds", w); got == 0 {
		t.Error("no last success time")
	}
}

// An object that re-storing would change (v1 prunes spec.legacy, which
// v1beta1 keeps) is refused: an Event and a metric say so, the other
// objects are re-stored, storedVersions is not pruned, and the operator
// goes on: once the next release's CRD keeps the field, the Migrator
// re-stores the rest and prunes.
func TestRefusedObjectBlocksThePruneOnly(t *testing.T) {
	e := newEnv(t)
	objs := objects(10, "refused-a")
	for i := range objs {
		if i%2 == 0 {
			objs[i].Spec["legacy"] = fmt.Sprintf("keep-%d", i)
		}
	}
	w := e.install("refused", func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions[0].Schema = schemaWith("size", "legacy")
		crd.Spec.Versions[1].Schema = schemaWith("size")
	}, objs)
	r := e.startReplica("solo", "refused-test", options(w))
	e.switchStorage(w)

	ev := e.waitEvent(w, "ObjectsRefused")
	for _, word := range []string{"5 objects re-stored at v1", "5 refused", "loses spec.legacy", "not pruned"} {
		if !strings.Contains(ev.Note, word) {
			t.Errorf("the ObjectsRefused Event %q lacks %q", ev.Note, word)
		}
	}
	if got := e.crd(w).Status.StoredVersions; !slices.Equal(got, []string{"v1beta1", "v1"}) {
		t.Errorf("storedVersions %v, want both: nothing pruned past a refused object", got)
	}
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 5, w.group + "/v1beta1": 5}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v, want %v (the refused objects left at v1beta1)", got, want)
	}
	if got := metric(t, "crdversion_migration_objects_refused_total", w); got != 5 {
		t.Errorf("objects refused metric %v, want 5", got)
	}
	if got := metric(t, "crdversion_migration_last_success_timestamp_seconds", w); got != 0 {
		t.Errorf("last success time %v after a refusal, want none", got)
	}

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd := e.crd(w)
		crd.Spec.Versions[1].Schema = schemaWith("size", "legacy")
		_, err := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Update(t.Context(), crd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	e.waitStoredVersions(w, "v1")
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 10}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v, want %v", got, want)
	}
	waitLine(t, r, "migration ended", w.name(), `"result"="done"`)
}

// A StorageVersionMigration of the resource that the cluster has not
// finished (here no kube-controller-manager takes it up: Pending) defers
// the Migrator, which writes nothing; once it is gone, the Migrator
// migrates.
func TestDefersToTheClustersMigration(t *testing.T) {
	e := newEnv(t)
	w := e.install("deferred", func(*apiextensionsv1.CustomResourceDefinition) {}, objects(10, "deferred-a"))
	e.switchStorage(w)
	svms := e.kube.StoragemigrationV1().StorageVersionMigrations()
	svm, err := svms.Create(t.Context(), &svmv1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"},
		Spec:       svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: w.group, Resource: "widgets"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svms.Delete(context.Background(), svm.Name, metav1.DeleteOptions{}) })
	r := e.startReplica("solo", "deferred-test", options(w))

	ev := e.waitEvent(w, "MigrationDeferred")
	if want := "StorageVersionMigration " + svm.Name + " of widgets." + w.group + " is Pending"; !strings.Contains(ev.Note, want) {
		t.Errorf("the MigrationDeferred Event %q lacks %q", ev.Note, want)
	}
	// It looks again every DeferFor: wait for a second look, so the first
	// is known to have written nothing for a while.
	waitLines(t, r, 2, "decided", w.name(), `"do"="defer"`)
	if got, want := e.stored(w), map[string]int{w.group + "/v1beta1": 10}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v while deferred, want %v", got, want)
	}
	if err := svms.Delete(t.Context(), svm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitStoredVersions(w, "v1")
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 10}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v, want %v", got, want)
	}
}

// schemaWith is a version's schema whose spec has the string or integer
// fields named, and nothing else (conversion None prunes the rest).
func schemaWith(fields ...string) *apiextensionsv1.CustomResourceValidation {
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	for _, f := range fields {
		spec.Properties[f] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		if f == "size" {
			spec.Properties[f] = apiextensionsv1.JSONSchemaProps{Type: "integer"}
		}
	}
	return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}}}
}

func waitLine(t *testing.T, r *replica, words ...string) {
	t.Helper()
	waitLines(t, r, 1, words...)
}

// waitLines polls r's log until n lines hold every word.
func waitLines(t *testing.T, r *replica, n int, words ...string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for len(r.log.with(words...)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("replica %s logged %d lines with %q within %s, want %d; its log:\n%s", r.name, len(r.log.with(words...)), words, within, n, strings.Join(r.log.with(), "\n"))
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
