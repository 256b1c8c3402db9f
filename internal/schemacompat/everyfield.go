package schemacompat

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// maxEveryFieldDepth bounds how deep EveryFieldObject goes: a CRD schema
// has no references, so it ends anyway; this keeps a pathological one small.
const maxEveryFieldDepth = 32

// EveryFieldObject is an object of the CRD at version v that holds every
// field path v's schema declares (to a bounded depth): one item of each
// array, one key of each map, each leaf a value of its type (MinimalObject's
// choice). Sent with fieldValidation=Strict, an API server whose handler
// serves a schema of v that lacks a path answers "unknown field": whether
// that handler serves this schema's fields, asked of the handler itself.
// The values need not be valid: a handler decodes before it validates.
func EveryFieldObject(crd *apiextensionsv1.CustomResourceDefinition, v, name, namespace string) map[string]any {
	obj := map[string]any{}
	if ver := specVersion(crd, v); ver != nil && ver.Schema != nil && ver.Schema.OpenAPIV3Schema != nil {
		if m, ok := everyField(ver.Schema.OpenAPIV3Schema, 0, true).(map[string]any); ok {
			obj = m
		}
	}
	meta := map[string]any{"name": name}
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		meta["namespace"] = namespace
	}
	obj["apiVersion"], obj["kind"], obj["metadata"] = crd.Spec.Group+"/"+v, crd.Spec.Names.Kind, meta
	return obj
}

// everyField is s's value with every declared path; resource is whether s
// is an object's root (its own or an embedded one), whose apiVersion, kind
// and metadata the API server reads as an object's, not as the schema says.
func everyField(s *apiextensionsv1.JSONSchemaProps, depth int, resource bool) any {
	if depth >= maxEveryFieldDepth || s.XIntOrString {
		return minimal(s)
	}
	switch {
	case s.Type == "object" || (s.Type == "" && len(s.Properties) > 0):
		out := map[string]any{}
		for n, p := range s.Properties {
			if resource && (n == "apiVersion" || n == "kind" || n == "metadata") {
				continue
			}
			out[n] = everyField(&p, depth+1, p.XEmbeddedResource)
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			// A map's one key: its values' paths are what the handler must know.
			out["key"] = everyField(s.AdditionalProperties.Schema, depth+1, s.AdditionalProperties.Schema.XEmbeddedResource)
		}
		return out
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		return []any{everyField(s.Items.Schema, depth+1, s.Items.Schema.XEmbeddedResource)}
	}
	return minimal(s)
}
