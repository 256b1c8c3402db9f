package controller_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// While the CRD reports StorageMigrating=True (kube-controller-manager's
// migrator sets it as it works; here it is written through /status, with
// no controller manager to change it), the Migrator defers and writes
// nothing. When the condition ends without a prune (the cluster's
// migration failed), the Migrator migrates at once.
func TestDefersWhileStorageMigrating(t *testing.T) {
	e := newEnv(t)
	w := e.install("migrating", func(*apiextensionsv1.CustomResourceDefinition) {}, objects(10, "migrating-a"))
	e.switchStorage(w)
	e.storageMigrating(w, apiextensionsv1.ConditionTrue, "MigrationRunning")
	r := e.startReplica("solo", "migrating-test", options(w))

	ev := e.waitEvent(w, "MigrationDeferred")
	if want := "StorageMigrating=True, MigrationRunning"; !strings.Contains(ev.Note, want) {
		t.Errorf("the MigrationDeferred Event %q lacks %q", ev.Note, want)
	}
	if got, want := e.stored(w), map[string]int{w.group + "/v1beta1": 10}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v while deferred, want %v", got, want)
	}
	if got := r.log.with("re-store pass", w.name()); len(got) > 0 {
		t.Errorf("the Migrator re-stored while the cluster's migrator worked: %v", got)
	}

	e.storageMigrating(w, apiextensionsv1.ConditionFalse, "MigrationFailed")
	e.waitStoredVersions(w, "v1")
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 10}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v, want %v", got, want)
	}
	waitLine(t, r, "queued", w.name(), "the cluster's storage version migrator is done with it")
}

// storageMigrating writes the CRD's StorageMigrating condition.
func (e *env) storageMigrating(w widgets, status apiextensionsv1.ConditionStatus, reason string) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd := e.crd(w)
		crd.Status.Conditions = slices.DeleteFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return c.Type == apiextensionsv1.StorageMigrating
		})
		crd.Status.Conditions = append(crd.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.StorageMigrating, Status: status, Reason: reason, Message: "set by the test", LastTransitionTime: metav1.Now(),
		})
		_, err := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().UpdateStatus(e.t.Context(), crd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}
