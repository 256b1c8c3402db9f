package schemacompat

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// widgets is widgets.example.com with the versions given (the first one
// storage), each served, with its schema (nil: none).
func widgets(versions []string, schemas ...*apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets"},
			Scope: apiextensionsv1.NamespaceScoped,
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: versions[:1]},
	}
	for i, v := range versions {
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: i == 0})
		if i < len(schemas) && schemas[i] != nil {
			c.Spec.Versions[i].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schemas[i]}
		}
	}
	return c
}
