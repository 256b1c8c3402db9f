package stages

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestVersionsOwners(t *testing.T) {
	versions := metav1.NewFieldsV1(`{"f:spec":{"f:versions":{}}}`)
	labels := metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{}}}`)
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
	if w := OwnersWarning(got); w == nil || !sameStep(w.Step, PromoteFileStep("FILE")) || OwnersWarning(nil) != nil {
		t.Errorf("warning %+v", w)
	}
}

func TestGitOpsOwner(t *testing.T) {
	argoManager := []metav1.ManagedFieldsEntry{{Manager: "argocd-controller", Operation: metav1.ManagedFieldsOperationUpdate}}
	cases := []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		managers    []metav1.ManagedFieldsEntry
		want        string
	}{
		{"none", nil, nil, nil, ""},
		{"argo tracking annotation", nil, map[string]string{"argocd.argoproj.io/tracking-id": "shop:apiextensions.k8s.io/CustomResourceDefinition:/widgets"}, nil, "Argo CD"},
		{"argo instance label", map[string]string{"argocd.argoproj.io/instance": "shop"}, nil, nil, "Argo CD"},
		{"flux kustomization", map[string]string{"kustomize.toolkit.fluxcd.io/name": "infra", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, nil, nil, "Flux"},
		{"flux helm release", map[string]string{"helm.toolkit.fluxcd.io/name": "shop"}, nil, nil, "Flux"},
		{"helm's instance label alone", map[string]string{"app.kubernetes.io/instance": "shop", "app.kubernetes.io/managed-by": "Helm"}, nil, nil, ""},
		{"instance label beside argo's manager", map[string]string{"app.kubernetes.io/instance": "shop"}, nil, argoManager, "Argo CD"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels, Annotations: tc.annotations, ManagedFields: tc.managers}}
			got := GitOpsOwner(crd)
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("got %+v, want none", got)
			case tc.want != "" && (got == nil || got.Tool != tc.want):
				t.Fatalf("got %+v, want %s", got, tc.want)
			}
		})
	}
}
