package lifecycle

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestVersionsOwners(t *testing.T) {
	versions := &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:versions":{}}}`)}
	labels := &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}
	c := crd([]string{"v1"}, "v1:served,storage")
	c.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "argocd-controller", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: versions},
		{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: versions},
		{Manager: "my-script", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: versions},
		{Manager: "some-applier", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: versions},
		{Manager: "kustomize-controller", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: labels},
		{Manager: "kubectl-crdversion", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: versions},
	}
	got := VersionsOwners(c, "kubectl-crdversion")
	want := []Owner{{"argocd-controller", "Apply", "Argo CD"}, {"helm", "Update", "Helm"}, {"some-applier", "Apply", ""}}
	if len(got) != len(want) {
		t.Fatalf("owners = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("owner %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if w := OwnersWarning(got); w == "" || OwnersWarning(nil) != "" {
		t.Errorf("warning %q", w)
	}
}
