// Package crdtest builds the CRDs the pure tests decide on.
package crdtest

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Widgets builds widgets.example.com (generation 3) from specs like
// "v1:served,storage" ("-" for no flags, "deprecated" too); stored is
// status.storedVersions.
func Widgets(stored []string, specs ...string) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", Generation: 3},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets"},
			Scope: apiextensionsv1.NamespaceScoped,
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: stored},
	}
	for _, s := range specs {
		name, flags, _ := strings.Cut(s, ":")
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name:       name,
			Served:     strings.Contains(flags, "served"),
			Storage:    strings.Contains(flags, "storage"),
			Deprecated: strings.Contains(flags, "deprecated"),
		})
	}
	return c
}
