package schemacompat

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestDefaultValuesNamesWhatDefaultsAddedLists(t *testing.T) {
	str := func(d string) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(d)}}
	}
	item := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"mode": str(`"rw"`)}}
	spec := func(extra bool) apiextensionsv1.JSONSchemaProps {
		s := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"kept": str(`"same"`)}}
		if extra {
			s.Properties["dataEngine"] = str(`"v1"`)
			s.Properties["disks"] = apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item}}
		}
		return s
	}
	version := func(name string, extra bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec(extra)}}}}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1beta1", false), version("v1beta2", true)}}}
	paths := DefaultsAdded(crd, "v1beta1", "v1beta2")
	got := DefaultValues(crd, "v1beta2", paths)
	want := map[string]string{"spec.dataEngine": `"v1"`, "spec.disks[*].mode": `"rw"`}
	if len(paths) != len(want) || len(got) != len(want) {
		t.Fatalf("paths %v, values %v; want %v", paths, got, want)
	}
	for p, v := range want {
		if got[p] != v {
			t.Errorf("%s: %q, want %q", p, got[p], v)
		}
	}
}
