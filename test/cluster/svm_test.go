package cluster

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"fmt"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/convwebhook"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// migrate --via=cluster hands the writing to kube-controller-manager's
// migrator and follows it: every etcd key ends at the storage version, the
// cluster prunes storedVersions, and status shows the migration.
func TestMigrateViaCluster(t *testing.T) {
	e := newEnv(t, shared)
	w := e.installWidgets("viacluster", 40, true, "via-a", "via-b")
	e.c.StartControllerManager(t)

	r := mustCode(t, e.plugin("migrate", w.name(), "--via=cluster", "--switch-grace=0s"), 0)
	contains(t, "migrate --via=cluster", r.Stdout, "the cluster's migration "+w.name()+"-", "Succeeded", "pruned by the cluster's migrator")
	contains(t, "migrate --via=cluster progress", r.Stderr, "created the cluster's migration")
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 80}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v, want %v", got, want)
	}
	if got := e.crd(w.name()).Status.StoredVersions; !slices.Equal(got, []string{"v1"}) {
		t.Errorf("storedVersions %v, want [v1]", got)
	}
	st := mustCode(t, e.plugin("status", w.name()), 0)
	contains(t, "status", st.Stdout, "CLUSTER MIGRATION", w.name()+"-", ": Succeeded", "StorageMigrating=False (MigrationSucceeded)")
}

// Where the cluster does not serve storagemigration.k8s.io the CRD-only
// sandbox's e2e test covers it; here the API is served but nothing may be
// created in dry-run mode: --dry-run=server creates nothing.
func TestMigrateViaClusterDryRunCreatesNothing(t *testing.T) {
	e := newEnv(t, shared)
	w := e.installWidgets("viadry", 5, true, "viadry-a")
	r := mustCode(t, e.plugin("migrate", w.name(), "--via=cluster", "--switch-grace=0s", "--dry-run=server"), 0)
	contains(t, "migrate --via=cluster --dry-run=server", r.Stdout, "dry run")
	if n := len(e.migrationsOf(w)); n != 0 {
		t.Errorf("a server dry run created %d StorageVersionMigrations", n)
	}
}

// While the cluster's own migrator works on a resource (its
// StorageMigrating condition True, set by the real controller), migrate
// refuses it; with --force it re-stores every object but does not prune.
func TestMigrateDoesNotRaceTheClusterMigrator(t *testing.T) {
	e := newEnv(t, shared)
	wh, err := convwebhook.Start(convwebhook.Correct)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wh.Stop() })
	w := e.installWidgetsConverted(wh.Conversion(), "race", 20, true, "race-a")
	e.c.StartControllerManager(t)

	// The controller's write of one object waits in the conversion webhook
	// until released (at most 25 s, under the API server's 30 s timeout):
	// its migration stays Running meanwhile.
	held, release := wh.Stall("w-0007", 25*time.Second)
	defer release()
	svm := e.createMigration(w)
	select {
	case <-held:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the controller did not reach the held object within 2m: %+v", e.migration(svm).Status)
	}
	e.waitCRD(w, "StorageMigrating=True", func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		return conditionTrue(crd, apiextensionsv1.StorageMigrating)
	})

	r := mustCode(t, e.plugin("migrate", w.name(), "--switch-grace=0s"), 1)
	contains(t, "migrate while the cluster migrates", r.Stderr, "error: ", "StorageMigrating=True", "--force")

	r = mustCode(t, e.plugin("migrate", w.name(), "--switch-grace=0s", "--force"), 3)
	contains(t, "migrate --force", r.Stdout, "20 objects", "not pruned", "StorageMigrating=True")
	if got := e.crd(w.name()).Status.StoredVersions; !slices.Equal(got, []string{"v1beta1", "v1"}) {
		t.Errorf("storedVersions %v right after migrate --force, want both (the plugin must not prune)", got)
	}
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 20}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v after migrate --force, want %v", got, want)
	}
	st := mustCode(t, e.plugin("status", w.name()), 0)
	contains(t, "status while the cluster migrates", st.Stdout, svm+": Running", "StorageMigrating=True")
	release()

	// The cluster's migration then finishes and prunes, by itself.
	e.waitCRD(w, "storedVersions [v1]", func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		return slices.Equal(crd.Status.StoredVersions, []string{"v1"})
	})
}

func (e *env) createMigration(w widgets) string {
	e.t.Helper()
	svm, err := e.kube.StoragemigrationV1().StorageVersionMigrations().Create(e.t.Context(), &svmv1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"},
		Spec:       svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: w.group, Resource: "widgets"}},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.kube.StoragemigrationV1().StorageVersionMigrations().Delete(context.Background(), svm.Name, metav1.DeleteOptions{})
	})
	return svm.Name
}

func (e *env) migration(name string) *svmv1.StorageVersionMigration {
	e.t.Helper()
	svm, err := e.kube.StoragemigrationV1().StorageVersionMigrations().Get(e.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return svm
}

func (e *env) migrationsOf(w widgets) []svmv1.StorageVersionMigration {
	e.t.Helper()
	list, err := e.kube.StoragemigrationV1().StorageVersionMigrations().List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(s svmv1.StorageVersionMigration) bool { return s.Spec.Resource.Group != w.group })
}

// waitCRD polls the CRD until ok, for up to two minutes.
func (e *env) waitCRD(w widgets, what string, ok func(*apiextensionsv1.CustomResourceDefinition) bool) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		crd, err := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, w.name(), metav1.GetOptions{})
		return err == nil && ok(crd), nil
	})
	if err != nil {
		e.t.Fatalf("%s: no %s within 2m: %+v", w.name(), what, e.crd(w.name()).Status)
	}
}

func conditionTrue(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// The cluster's migrator re-stores without a check of each object, so
// --via=cluster refuses a CRD whose objects may be stored at a version no
// one serves and whose schemas do not prove the round trip (what only that
// version holds, nothing shows): it creates no migration and writes
// nothing, and its words lead to the plugin's own pass, which serves the
// version again, checks each object at it, and goes through.
func TestMigrateViaClusterRefusesWhatItCannotCheck(t *testing.T) {
	e := newEnv(t, shared)
	ctx := t.Context()
	w := e.installWidgets("viaunserved", 0, false)
	var objs []fixtures.Object
	for i := range 6 {
		objs = append(objs, fixtures.Object{Namespace: "default", Name: fmt.Sprintf("w-%d", i), Spec: map[string]any{"size": int64(i)}})
	}
	if err := e.clients.CreateObjects(ctx, w.gvr("v1beta1"), "Widget", objs); err != nil {
		t.Fatal(err)
	}
	if err := e.clients.SwitchStorage(ctx, w.name(), "v1", false); err != nil {
		t.Fatal(err)
	}
	// v1 keeps spec.size alone: the schemas no longer prove v1beta1→v1→
	// v1beta1 (a spec.color would be lost), though no object has one.
	crds := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	crd := e.crd(w.name())
	crd.Spec.Versions[0].Served = false
	crd.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{
		Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}}
	if _, err := crds.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	r := mustCode(t, e.plugin("migrate", w.name(), "--via=cluster", "--switch-grace=0s"), 1)
	contains(t, "migrate --via=cluster refused", r.Stderr, "error: ", "v1beta1 not served", "--via=plugin checks each object")
	if n := len(e.migrationsOf(w)); n != 0 {
		t.Errorf("a refused --via=cluster created %d StorageVersionMigrations", n)
	}
	if got, want := e.stored(w), map[string]int{w.group + "/v1beta1": 6}; !maps.Equal(got, want) {
		t.Errorf("after the refusal etcd holds %v, want %v", got, want)
	}

	// The plugin's own pass, as the hint says.
	r = mustCode(t, e.plugin("migrate", w.name(), "--via=plugin", "--switch-grace=0s"), 0)
	contains(t, "migrate --via=plugin", r.Stdout, "(pruned)")
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 6}; !maps.Equal(got, want) {
		t.Errorf("after the plugin's pass etcd holds %v, want %v", got, want)
	}
	after := e.crd(w.name())
	if !slices.Equal(after.Status.StoredVersions, []string{"v1"}) {
		t.Errorf("storedVersions %v, want [v1]", after.Status.StoredVersions)
	}
	if after.Spec.Versions[0].Served {
		t.Errorf("v1beta1 is served after the pass; it was not before")
	}
}
