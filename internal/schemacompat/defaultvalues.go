package schemacompat

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// DefaultValues maps each of paths (as DefaultsAdded names them) to the
// default v's schema gives there, as JSON: what a notice shows before the
// write persists it.
func DefaultValues(crd *apiextensionsv1.CustomResourceDefinition, v string, paths []string) map[string]string {
	out := make(map[string]string, len(paths))
	want := make(map[string]bool, len(paths))
	for _, p := range paths {
		want[p] = true
	}
	if s := SchemaOf(crd, v); s != nil {
		defaultsAt("", s, want, out)
	}
	return out
}

// defaultsAt walks s as addedDefaults does, so the paths are spelled alike.
func defaultsAt(path string, s *apiextensionsv1.JSONSchemaProps, want map[string]bool, out map[string]string) {
	if s.Default != nil && want[display(path)] {
		out[display(path)] = string(s.Default.Raw)
	}
	for k, p := range s.Properties {
		defaultsAt(child(path, k), &p, want, out)
	}
	if s.Items != nil && s.Items.Schema != nil {
		defaultsAt(path+"[*]", s.Items.Schema, want, out)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		defaultsAt(path+".*", s.AdditionalProperties.Schema, want, out)
	}
}
