package schemacompat

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// MinimalObject is the smallest object of the CRD at version v that its
// schema is likely to accept: every required field filled with its
// default, its first enum value, or the least value its bounds allow. It
// serves as a probe a converter must convert (a server-side dry-run create
// persists nothing); a schema it cannot satisfy (a pattern, a CEL rule) is
// answered by the API server as invalid, before any conversion.
func MinimalObject(crd *apiextensionsv1.CustomResourceDefinition, v, name, namespace string) map[string]any {
	meta := map[string]any{"name": name}
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		meta["namespace"] = namespace
	}
	obj := map[string]any{}
	if ver := specVersion(crd, v); ver != nil && ver.Schema != nil && ver.Schema.OpenAPIV3Schema != nil {
		if m, ok := minimal(ver.Schema.OpenAPIV3Schema).(map[string]any); ok {
			obj = m
		}
	}
	obj["apiVersion"], obj["kind"], obj["metadata"] = crd.Spec.Group+"/"+v, crd.Spec.Names.Kind, meta
	return obj
}

func minimal(s *apiextensionsv1.JSONSchemaProps) any {
	if s.Default != nil {
		var v any
		if json.Unmarshal(s.Default.Raw, &v) == nil {
			return v
		}
	}
	if len(s.Enum) > 0 {
		var v any
		if json.Unmarshal(s.Enum[0].Raw, &v) == nil {
			return v
		}
	}
	switch {
	case s.XIntOrString:
		return 0
	case s.Type == "object":
		out := map[string]any{}
		names := slices.Clone(s.Required)
		if s.MinProperties != nil {
			// Required first, then the declared properties in order.
			var rest []string
			for n := range s.Properties {
				if !slices.Contains(names, n) {
					rest = append(rest, n)
				}
			}
			slices.Sort(rest)
			for _, n := range rest {
				if int64(len(names)) >= *s.MinProperties {
					break
				}
				names = append(names, n)
			}
		}
		for _, n := range names {
			if n == "apiVersion" || n == "kind" || n == "metadata" {
				continue
			}
			if p, ok := s.Properties[n]; ok {
				out[n] = minimal(&p)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				out[n] = minimal(s.AdditionalProperties.Schema)
			} else {
				out[n] = map[string]any{}
			}
		}
		return out
	case s.Type == "array":
		out := []any{}
		if s.MinItems != nil && s.Items != nil && s.Items.Schema != nil {
			for i := int64(0); i < *s.MinItems; i++ {
				out = append(out, minimal(s.Items.Schema))
			}
		}
		return out
	case s.Type == "string":
		return minimalString(s)
	case s.Type == "integer":
		return int64(math.Ceil(least(s)))
	case s.Type == "number":
		return least(s)
	case s.Type == "boolean":
		return false
	}
	return map[string]any{}
}

// least is the least number the bounds allow, or 0 where they allow it.
func least(s *apiextensionsv1.JSONSchemaProps) float64 {
	switch {
	case s.Minimum != nil && s.ExclusiveMinimum:
		return *s.Minimum + 1
	case s.Minimum != nil:
		return *s.Minimum
	case s.Maximum != nil && *s.Maximum < 0:
		return *s.Maximum - 1
	}
	return 0
}

func minimalString(s *apiextensionsv1.JSONSchemaProps) string {
	switch s.Format {
	case "date-time":
		return "1970-01-01T00:00:00Z"
	case "date":
		return "1970-01-01"
	case "duration":
		return "1s"
	case "int-or-string":
		return "0"
	case "uuid":
		return "00000000-0000-0000-0000-000000000000"
	case "byte":
		return ""
	}
	n := int64(1)
	if s.MinLength != nil {
		n = *s.MinLength
	}
	return strings.Repeat("a", int(n))
}
