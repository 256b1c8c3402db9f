package schemacompat

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

type schemaProps = apiextensionsv1.JSONSchemaProps

// widgetSchema is a fresh schema with one field of each kind the proof tells
// apart, so a case changes just the field it is about.
func widgetSchema() *schemaProps {
	preserve := true
	maxLen := int64(10)
	return &schemaProps{Type: "object", Properties: map[string]schemaProps{
		"apiVersion": {Type: "string"},
		"kind":       {Type: "string"},
		"metadata":   {Type: "object"},
		"spec": {Type: "object", Required: []string{"replicas"}, Properties: map[string]schemaProps{
			"replicas": {Type: "integer"},
			"legacy":   {Type: "string", MaxLength: &maxLen},
			"mode":     {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"a"`)}, {Raw: []byte(`"b"`)}}},
			"port":     {XIntOrString: true},
			"note":     {Type: "string", Nullable: true},
			"template": {Type: "object", Properties: map[string]schemaProps{"image": {Type: "string"}}},
			"config":   {Type: "object", XPreserveUnknownFields: &preserve},
			"labels":   {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &schemaProps{Type: "string"}}},
			"ports": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &schemaProps{Type: "object", Properties: map[string]schemaProps{
				"name": {Type: "string"},
				"port": {Type: "integer"},
			}}}},
		}},
	}}
}

// edited is widgetSchema with f applied to the node at the dotted path.
func edited(path string, f func(*schemaProps)) *schemaProps {
	s := widgetSchema()
	edit(s, path, f)
	return s
}

func edit(s *schemaProps, path string, f func(*schemaProps)) {
	if path == "" {
		f(s)
		return
	}
	k, rest, _ := strings.Cut(path, ".")
	p := s.Properties[k]
	edit(&p, rest, f)
	s.Properties[k] = p
}

func defaultOne(s *schemaProps) { s.Default = &apiextensionsv1.JSON{Raw: []byte("1")} }

func without(k string) func(*schemaProps) { return func(s *schemaProps) { delete(s.Properties, k) } }

// proofCRD has v1beta1 as storage and v1 beside it; a nil schema leaves the
// version without one.
func proofCRD(old, new *schemaProps) *apiextensionsv1.CustomResourceDefinition {
	return widgets([]string{"v1beta1", "v1"}, old, new)
}

func TestSchemaProof(t *testing.T) {
	preserve := true
	for _, tc := range []struct {
		name     string
		crd      *apiextensionsv1.CustomResourceDefinition
		old, new string // v1beta1 and v1 unless set
		proven   bool
		reason   string // exact when not proven
	}{
		{name: "identical schemas", crd: proofCRD(widgetSchema(), widgetSchema()), proven: true},
		{name: "new adds a field", proven: true,
			crd: proofCRD(widgetSchema(), edited("spec", func(s *schemaProps) { s.Properties["extra"] = schemaProps{Type: "string"} }))},
		{name: "new makes a field nullable", proven: true,
			crd: proofCRD(widgetSchema(), edited("spec.replicas", func(s *schemaProps) { s.Nullable = true }))},
		{name: "field removed at top level", crd: proofCRD(widgetSchema(), edited("spec", without("legacy"))),
			reason: "spec.legacy: in v1beta1's schema, not in v1's"},
		{name: "field removed nested", crd: proofCRD(widgetSchema(), edited("spec.template", without("image"))),
			reason: "spec.template.image: in v1beta1's schema, not in v1's"},
		{name: "whole spec removed", crd: proofCRD(widgetSchema(), edited("", without("spec"))),
			reason: "spec: in v1beta1's schema, not in v1's"},
		{name: "type changed string to integer",
			crd:    proofCRD(edited("spec.replicas", func(s *schemaProps) { s.Type = "string" }), widgetSchema()),
			reason: "spec.replicas: type string in v1beta1's schema, integer in v1's"},
		{name: "int-or-string replaced by string",
			crd:    proofCRD(widgetSchema(), edited("spec.port", func(s *schemaProps) { s.XIntOrString, s.Type = false, "string" })),
			reason: "spec.port: type unset in v1beta1's schema, string in v1's"},
		{name: "int-or-string dropped where preserve-unknown leaves the type unset",
			crd: proofCRD(
				edited("spec.port", func(s *schemaProps) { s.XPreserveUnknownFields = &preserve }),
				edited("spec.port", func(s *schemaProps) { s.XIntOrString, s.XPreserveUnknownFields = false, &preserve })),
			reason: "spec.port: x-kubernetes-int-or-string is true in v1beta1's schema, false in v1's"},
		{name: "preserve-unknown dropped in new", crd: proofCRD(widgetSchema(), edited("spec.config", func(s *schemaProps) { s.XPreserveUnknownFields = nil })),
			reason: "spec.config: x-kubernetes-preserve-unknown-fields in v1beta1's schema, not in v1's"},
		{name: "preserve-unknown kept but new gives an unknown field a schema",
			crd: proofCRD(widgetSchema(), edited("spec.config", func(s *schemaProps) {
				s.Properties = map[string]schemaProps{"mode": {Type: "string"}}
			})),
			reason: "spec.config.mode: kept unchecked by v1beta1's x-kubernetes-preserve-unknown-fields, pruned by its schema in v1's"},
		{name: "nullable dropped", crd: proofCRD(widgetSchema(), edited("spec.note", func(s *schemaProps) { s.Nullable = false })),
			reason: "spec.note: nullable in v1beta1's schema, not in v1's"},
		{name: "embedded resource dropped",
			crd:    proofCRD(edited("spec.template", func(s *schemaProps) { s.XEmbeddedResource = true }), widgetSchema()),
			reason: "spec.template: x-kubernetes-embedded-resource is true in v1beta1's schema, false in v1's"},
		{name: "items removed", crd: proofCRD(widgetSchema(), edited("spec.ports", func(s *schemaProps) { s.Items = nil })),
			reason: "spec.ports: items in v1beta1's schema, not in v1's"},
		{name: "items changed", crd: proofCRD(widgetSchema(), edited("spec.ports", func(s *schemaProps) { delete(s.Items.Schema.Properties, "port") })),
			reason: "spec.ports[*].port: in v1beta1's schema, not in v1's"},
		{name: "additionalProperties map value type changed",
			crd:    proofCRD(widgetSchema(), edited("spec.labels", func(s *schemaProps) { s.AdditionalProperties.Schema.Type = "integer" })),
			reason: "spec.labels.*: type string in v1beta1's schema, integer in v1's"},
		{name: "additionalProperties map removed", crd: proofCRD(widgetSchema(), edited("spec.labels", func(s *schemaProps) { s.AdditionalProperties = nil })),
			reason: "spec.labels: additionalProperties in v1beta1's schema, not in v1's"},
		{name: "additionalProperties map loses its value schema",
			crd:    proofCRD(widgetSchema(), edited("spec.labels", func(s *schemaProps) { s.AdditionalProperties.Schema = nil })),
			reason: "spec.labels: additionalProperties has a schema in v1beta1's schema, none in v1's"},
		{name: "object turned into a map of the same value type", proven: true,
			crd: proofCRD(widgetSchema(), edited("spec.template", func(s *schemaProps) {
				s.Properties = nil
				s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &schemaProps{Type: "string"}}
			}))},
		{name: "preserve-unknown in new covers a removed property", proven: true,
			crd: proofCRD(widgetSchema(), edited("spec", func(s *schemaProps) {
				delete(s.Properties, "legacy")
				s.XPreserveUnknownFields = &preserve
			}))},
		{name: "validation-only changes", proven: true,
			crd: proofCRD(widgetSchema(), edited("spec", func(s *schemaProps) {
				maxLen := int64(3)
				edit(s, "legacy", func(s *schemaProps) { s.MaxLength, s.Pattern = &maxLen, "^[a-z]+$" })
				edit(s, "mode", func(s *schemaProps) { s.Enum = s.Enum[:1] })
				edit(s, "replicas", func(s *schemaProps) {
					s.XValidations = apiextensionsv1.ValidationRules{{Rule: "self >= 0"}}
				})
				s.Required = append(s.Required, "mode")
			}))},
		{name: "default added in new fills the field in", crd: proofCRD(widgetSchema(), edited("spec.replicas", defaultOne)),
			reason: "spec.replicas: a default in v1's schema that v1beta1's lacks fills the field in on the way"},
		{name: "a default on a field only new has", crd: proofCRD(widgetSchema(), edited("spec", func(s *schemaProps) {
			s.Properties["added"] = schemaProps{Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"x"`)}}
		})), reason: "spec.added: a default in v1's schema that v1beta1's lacks fills the field in on the way"},
		{name: "a default deep in an array only new has", crd: proofCRD(widgetSchema(), edited("spec", func(s *schemaProps) {
			s.Properties["rules"] = schemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &schemaProps{Type: "object",
				Properties: map[string]schemaProps{"weight": {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte("1")}}}}}}
		})), reason: "spec.rules[*].weight: a default in v1's schema that v1beta1's lacks fills the field in on the way"},
		{name: "the same default in both", proven: true, crd: proofCRD(edited("spec.replicas", defaultOne), edited("spec.replicas", defaultOne))},
		{name: "root metadata, apiVersion and kind are the server's", proven: true,
			crd: proofCRD(widgetSchema(), edited("", func(s *schemaProps) {
				delete(s.Properties, "metadata")
				delete(s.Properties, "apiVersion")
				delete(s.Properties, "kind")
			}))},
		{name: "webhook conversion",
			crd: func() *apiextensionsv1.CustomResourceDefinition {
				c := proofCRD(widgetSchema(), widgetSchema())
				c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
				return c
			}(),
			reason: "conversion is Webhook: only the webhook knows"},
		{name: "explicit None conversion", proven: true,
			crd: func() *apiextensionsv1.CustomResourceDefinition {
				c := proofCRD(widgetSchema(), widgetSchema())
				c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
				return c
			}()},
		{name: "preserveUnknownFields CRD",
			crd: func() *apiextensionsv1.CustomResourceDefinition {
				c := proofCRD(widgetSchema(), widgetSchema())
				c.Spec.PreserveUnknownFields = true
				return c
			}(),
			reason: "spec.preserveUnknownFields is true: the server does not prune by the schemas, so they prove nothing"},
		{name: "version not in spec", crd: proofCRD(widgetSchema(), widgetSchema()), new: "v2",
			reason: "v2 is not in spec.versions"},
		{name: "same version", crd: proofCRD(widgetSchema(), nil), new: "v1beta1", proven: true},
		{name: "neither version has a schema", crd: proofCRD(nil, nil), proven: true},
		{name: "old version without schema", crd: proofCRD(nil, widgetSchema()),
			reason: "v1beta1 has no schema, v1 has one: it prunes what v1beta1's objects hold beyond it"},
		{name: "new version without schema", crd: proofCRD(widgetSchema(), nil),
			reason: "v1beta1 has a schema, v1 has none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, new := tc.old, tc.new
			if old == "" {
				old = "v1beta1"
			}
			if new == "" {
				new = "v1"
			}
			proven, reason := SchemaProof(tc.crd, old, new)
			if proven != tc.proven {
				t.Fatalf("proven = %v (%s), want %v", proven, reason, tc.proven)
			}
			if reason == "" {
				t.Error("no reason")
			}
			if !tc.proven && reason != tc.reason {
				t.Errorf("reason:\n got %s\nwant %s", reason, tc.reason)
			}
		})
	}
}

func TestSchemaProofReportsTheFirstPathInOrder(t *testing.T) {
	// Two losses: the one a sorted walk meets first is reported, every time.
	c := proofCRD(widgetSchema(), edited("spec", func(s *schemaProps) {
		delete(s.Properties, "template")
		delete(s.Properties, "legacy")
	}))
	for range 20 {
		if _, reason := SchemaProof(c, "v1beta1", "v1"); reason != "spec.legacy: in v1beta1's schema, not in v1's" {
			t.Fatalf("reason = %s", reason)
		}
	}
}
