package crdmigrator

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
)

// While the cluster's own migration runs, the Migrator looks again every
// DeferFor: a look that finds the same reason records no Event; a new
// reason, or a deferral after the CRD left it, records one.
func TestADeferralIsRecordedOnceForEachReason(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	m := &Migrator{events: rec}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"}}
	m.deferEvent(crd, "StorageMigrating=True")
	m.deferEvent(crd, "StorageMigrating=True")
	m.deferEvent(crd, "the cluster's StorageVersionMigration w-1 is Running")
	delete(m.deferred, crd.Name) // migrated meanwhile
	m.deferEvent(crd, "StorageMigrating=True")
	if got := len(rec.Events); got != 3 {
		t.Fatalf("%d Events, want 3", got)
	}
}
