package controller_test

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// The release after the migration removes v1beta1: the objects' managedFields
// entries recorded at v1beta1 would break server-side apply
// (kubernetes#111937), and the Migrator's managedFields cleanup, run on the
// CRD's new generation, drops them.
func TestManagedFieldsCleanedAfterRemoval(t *testing.T) {
	e := newEnv(t)
	w := e.install("cleanup", func(*apiextensionsv1.CustomResourceDefinition) {}, objects(5, "cleanup-a"))
	e.startReplica("solo", "cleanup-test", options(w))
	e.switchStorage(w)
	e.waitStoredVersions(w, "v1")
	if n := e.entriesAt(w, "v1beta1"); n != 5 {
		t.Fatalf("setup: %d objects have managedFields entries at v1beta1, want 5", n)
	}

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd := e.crd(w)
		crd.Spec.Versions = crd.Spec.Versions[1:]
		_, err := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Update(t.Context(), crd, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ev := e.waitEvent(w, "ManagedFieldsCleaned")
	if want := "from 5 objects"; !strings.Contains(ev.Note, want) {
		t.Errorf("the ManagedFieldsCleaned Event %q lacks %q", ev.Note, want)
	}
	if n := e.entriesAt(w, "v1beta1"); n != 0 {
		t.Errorf("%d objects still have managedFields entries at v1beta1", n)
	}
}

// entriesAt counts the objects with a managedFields entry at version.
func (e *env) entriesAt(w widgets, version string) int {
	e.t.Helper()
	list, err := e.clients.Dynamic.Resource(w.gvr("v1")).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, o := range list.Items {
		for _, f := range o.GetManagedFields() {
			if f.APIVersion == w.group+"/"+version {
				n++
				break
			}
		}
	}
	return n
}
