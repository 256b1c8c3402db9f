package usage

import (
	"reflect"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func object(entries ...metav1.ManagedFieldsEntry) metav1.PartialObjectMetadata {
	return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ManagedFields: entries}}
}

func entry(manager string, op metav1.ManagedFieldsOperationType, apiVersion, subresource string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: apiVersion, Subresource: subresource}
}

func TestCountManagers(t *testing.T) {
	crd := widgets("example.com",
		apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true},
		apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1beta1", Served: true, Deprecated: true},
	)
	for _, tc := range []struct {
		name  string
		pages [][]metav1.PartialObjectMetadata
		want  []ManagerUse
	}{
		{
			name: "counted per object, over pages, by manager, operation and version",
			pages: [][]metav1.PartialObjectMetadata{
				{
					object(entry("helm", metav1.ManagedFieldsOperationApply, "example.com/v1", "")),
					object(entry("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, "example.com/v1beta1", "")),
				},
				{
					object(entry("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, "example.com/v1beta1", ""),
						entry("helm", metav1.ManagedFieldsOperationApply, "example.com/v1beta1", "")),
				},
			},
			want: []ManagerUse{
				{Manager: "helm", Operation: "Apply", Version: "v1", Objects: 1},
				{Manager: "kubectl-client-side-apply", Operation: "Update", Version: "v1beta1", Objects: 2},
				{Manager: "helm", Operation: "Apply", Version: "v1beta1", Objects: 1},
			},
		},
		{
			name: "a manager's entries for the object and its status count once; Apply and Update apart",
			pages: [][]metav1.PartialObjectMetadata{{
				object(entry("operator", metav1.ManagedFieldsOperationUpdate, "example.com/v1beta1", ""),
					entry("operator", metav1.ManagedFieldsOperationUpdate, "example.com/v1beta1", "status"),
					entry("operator", metav1.ManagedFieldsOperationApply, "example.com/v1beta1", "")),
			}},
			want: []ManagerUse{
				{Manager: "operator", Operation: "Apply", Version: "v1beta1", Objects: 1},
				{Manager: "operator", Operation: "Update", Version: "v1beta1", Objects: 1},
			},
		},
		{
			name: "system managers left out",
			pages: [][]metav1.PartialObjectMetadata{{
				object(entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "example.com/v1beta1", ""),
					entry("generic-garbage-collector", metav1.ManagedFieldsOperationUpdate, "example.com/v1beta1", ""),
					entry("storage-version-migrator-controller", metav1.ManagedFieldsOperationApply, "example.com/v1", ""),
					entry("kubectl-crdversion", metav1.ManagedFieldsOperationUpdate, "example.com/v1", ""),
					entry("argocd-controller", metav1.ManagedFieldsOperationApply, "example.com/v1beta1", "")),
			}},
			want: []ManagerUse{{Manager: "argocd-controller", Operation: "Apply", Version: "v1beta1", Objects: 1}},
		},
		{
			name: "other groups and versions not in spec are not this CRD's",
			pages: [][]metav1.PartialObjectMetadata{{
				object(entry("a", metav1.ManagedFieldsOperationUpdate, "other.example.com/v1beta1", ""),
					entry("b", metav1.ManagedFieldsOperationUpdate, "example.com/v1alpha1", ""),
					entry("c", metav1.ManagedFieldsOperationUpdate, "", "")),
				object(),
			}},
			want: []ManagerUse{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counts := map[managerKey]int64{}
			for _, p := range tc.pages {
				countManagers(p, crd, time.Time{}, counts)
			}
			if got := sortedUses(counts); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestListVersion(t *testing.T) {
	v := func(name string, served, storage, deprecated bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Storage: storage, Deprecated: deprecated}
	}
	for _, tc := range []struct {
		name     string
		versions []apiextensionsv1.CustomResourceDefinitionVersion
		want     string
	}{
		{"storage when served", []apiextensionsv1.CustomResourceDefinitionVersion{v("v2", true, false, false), v("v1", true, true, false)}, "v1"},
		{"else the newest served not deprecated", []apiextensionsv1.CustomResourceDefinitionVersion{v("v1", false, true, false), v("v1beta1", true, false, true), v("v1alpha1", true, false, false), v("v1alpha2", true, false, false)}, "v1alpha2"},
		{"else a deprecated one", []apiextensionsv1.CustomResourceDefinitionVersion{v("v1", false, true, false), v("v1beta1", true, false, true)}, "v1beta1"},
		{"not a deprecated storage version", []apiextensionsv1.CustomResourceDefinitionVersion{v("v1", true, false, false), v("v1beta1", true, true, true)}, "v1"},
		{"a deprecated storage version before another deprecated one", []apiextensionsv1.CustomResourceDefinitionVersion{v("v1", true, false, true), v("v1beta1", true, true, true)}, "v1beta1"},
		{"none served", []apiextensionsv1.CustomResourceDefinitionVersion{v("v1", false, true, false)}, ""},
	} {
		if got := ListVersion(widgets("example.com", tc.versions...)); got != tc.want {
			t.Errorf("%s: ListVersion = %q, want %q", tc.name, got, tc.want)
		}
	}
}
