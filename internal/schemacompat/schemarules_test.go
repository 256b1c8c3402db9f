package schemacompat

import (
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

type ruleNode = apiextensionsv1.JSONSchemaProps

// rulesBase is a fresh schema with a field for each rule to act on, so a
// case changes just the field it is about and every other field must come
// out unreported.
func rulesBase() *ruleNode {
	return &ruleNode{Type: "object", Properties: map[string]ruleNode{
		"apiVersion": {Type: "string"},
		"kind":       {Type: "string"},
		"metadata":   {Type: "object"},
		"spec": {
			Type:         "object",
			Required:     []string{"replicas"},
			XValidations: apiextensionsv1.ValidationRules{{Rule: "self.replicas >= 0", Message: "no negative replicas"}},
			Properties: map[string]ruleNode{
				"replicas": {Type: "integer", Minimum: ptrF(0), Maximum: ptrF(10), Default: rawJSON(`1`)},
				"weight":   {Type: "number"},
				"name":     {Type: "string", MinLength: ptrI(1), MaxLength: ptrI(63), Pattern: "^[a-z]+$"},
				"mode":     {Type: "string", Enum: enumOf(`"a"`, `"b"`)},
				"legacy":   {Type: "string"},
				"port":     {XIntOrString: true},
				"endpoint": {Type: "string", Format: "uri"},
				"note":     {Type: "string", Nullable: true},
				"config":   {Type: "object", XPreserveUnknownFields: ptrB(true)},
				"labels": {Type: "object", MaxProperties: ptrI(5), AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{
					Allows: true, Schema: &ruleNode{Type: "string"},
				}},
				"template": {Type: "object", Properties: map[string]ruleNode{"image": {Type: "string"}}},
				"ports": {
					Type: "array", MinItems: ptrI(1), MaxItems: ptrI(4), XListType: ptrS("map"), XListMapKeys: []string{"name"},
					Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &ruleNode{Type: "object", Required: []string{"name"}, Properties: map[string]ruleNode{
						"name": {Type: "string"},
						"port": {Type: "integer"},
					}}},
				},
				"containers": {
					Type: "array",
					Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &ruleNode{Type: "object", Properties: map[string]ruleNode{
						"name":  {Type: "string"},
						"image": {Type: "string"},
					}}},
				},
			},
		},
	}}
}

// rulesEdit is rulesBase with f applied to the node at path: dotted
// property names, name[*] for an array's items, * for a map's values.
func rulesEdit(path string, f func(*ruleNode)) *ruleNode {
	s := rulesBase()
	rulesApply(s, path, f)
	return s
}

func rulesApply(s *ruleNode, path string, f func(*ruleNode)) {
	if path == "" {
		f(s)
		return
	}
	seg, rest, _ := strings.Cut(path, ".")
	if seg == "*" {
		rulesApply(s.AdditionalProperties.Schema, rest, f)
		return
	}
	name, items := strings.CutSuffix(seg, "[*]")
	p := s.Properties[name]
	if items {
		rulesApply(p.Items.Schema, rest, f)
	} else {
		rulesApply(&p, rest, f)
	}
	s.Properties[name] = p
}

func ptrF(v float64) *float64 { return &v }
func ptrI(v int64) *int64     { return &v }
func ptrS(v string) *string   { return &v }
func ptrB(v bool) *bool       { return &v }

func rawJSON(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

func enumOf(vs ...string) []apiextensionsv1.JSON {
	out := make([]apiextensionsv1.JSON, len(vs))
	for i, v := range vs {
		out[i] = apiextensionsv1.JSON{Raw: []byte(v)}
	}
	return out
}

func dropProperty(k string) func(*ruleNode) { return func(s *ruleNode) { delete(s.Properties, k) } }

func wantBreak(path, rule, msg string) SchemaChange {
	return SchemaChange{Path: path, Rule: rule, Breaking: true, Message: msg}
}

func wantNote(path, rule, msg string) SchemaChange {
	return SchemaChange{Path: path, Rule: rule, Message: msg}
}

func TestSchemaChanges(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new *ruleNode
		want     []SchemaChange
	}{
		{name: "identical schemas", old: rulesBase(), new: rulesBase()},
		{name: "no schema on either side"},
		{name: "schema added where there was none", new: rulesBase()},
		{
			name: "schemaRemoved", old: rulesBase(),
			want: []SchemaChange{wantBreak("(root)", "schemaRemoved", "schema changed from present to absent")},
		},
		{
			name: "resource root's apiVersion, kind and metadata are the server's",
			old:  rulesBase(),
			new: rulesEdit("", func(s *ruleNode) {
				delete(s.Properties, "metadata")
				s.Properties["kind"] = ruleNode{Type: "integer"}
			}),
		},

		{
			name: "fieldRemoved", old: rulesBase(), new: rulesEdit("spec", dropProperty("legacy")),
			want: []SchemaChange{wantBreak("spec.legacy", "fieldRemoved", "field removed (was string, now absent)")},
		},
		{
			name: "fieldRemoved is not reported for a field added", old: rulesBase(),
			new: rulesEdit("spec", func(s *ruleNode) { s.Properties["extra"] = ruleNode{Type: "string"} }),
		},
		{
			name: "fieldRemoved stops at the removed field", old: rulesBase(), new: rulesEdit("spec", dropProperty("template")),
			want: []SchemaChange{wantBreak("spec.template", "fieldRemoved", "field removed (was object, now absent)")},
		},
		{
			name: "fieldRemoved is not reported where new preserves unknown fields", old: rulesBase(),
			new: rulesEdit("spec", func(s *ruleNode) {
				delete(s.Properties, "legacy")
				s.XPreserveUnknownFields = ptrB(true)
			}),
		},
		{
			name: "fieldRemoved in an array of objects", old: rulesBase(), new: rulesEdit("spec.containers[*]", dropProperty("image")),
			want: []SchemaChange{wantBreak("spec.containers[*].image", "fieldRemoved", "field removed (was string, now absent)")},
		},
		{
			name: "fieldRemoved holds a field turned map key to the map's value schema", old: rulesBase(),
			new: rulesEdit("spec.template", func(s *ruleNode) {
				s.Properties = nil
				s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &ruleNode{Type: "integer"}}
			}),
			want: []SchemaChange{wantBreak("spec.template.image", "typeChanged", "type changed from string to integer")},
		},
		{
			name: "fieldRemoved for map values no longer allowed", old: rulesBase(),
			new:  rulesEdit("spec.labels", func(s *ruleNode) { s.AdditionalProperties = nil }),
			want: []SchemaChange{wantBreak("spec.labels.*", "fieldRemoved", "additionalProperties changed from allowed to absent")},
		},

		{
			// replicas also has a minimum, maximum and default: none of
			// them is reported once the type itself changed.
			name: "typeChanged", old: rulesBase(), new: rulesEdit("spec.replicas", func(s *ruleNode) { s.Type = "string" }),
			want: []SchemaChange{wantBreak("spec.replicas", "typeChanged", "type changed from integer to string")},
		},
		{
			name: "typeChanged from int-or-string", old: rulesBase(),
			new:  rulesEdit("spec.port", func(s *ruleNode) { s.XIntOrString, s.Type = false, "string" }),
			want: []SchemaChange{wantBreak("spec.port", "typeChanged", "type changed from int-or-string to string")},
		},
		{
			name: "typeChanged stops at the changed node", old: rulesBase(),
			new:  rulesEdit("spec.template", func(s *ruleNode) { s.Type, s.Properties = "string", nil }),
			want: []SchemaChange{wantBreak("spec.template", "typeChanged", "type changed from object to string")},
		},
		{
			name: "typeChanged in map values", old: rulesBase(), new: rulesEdit("spec.labels.*", func(s *ruleNode) { s.Type = "integer" }),
			want: []SchemaChange{wantBreak("spec.labels.*", "typeChanged", "type changed from string to integer")},
		},

		{
			name: "enumValueRemoved", old: rulesBase(), new: rulesEdit("spec.mode", func(s *ruleNode) { s.Enum = enumOf(`"a"`) }),
			want: []SchemaChange{wantBreak("spec.mode", "enumValueRemoved", `enum changed from ["a", "b"] to ["a"], dropping "b"`)},
		},
		{
			name: "enumValueRemoved is not reported for a value added", old: rulesBase(),
			new: rulesEdit("spec.mode", func(s *ruleNode) { s.Enum = enumOf(`"a"`, `"b"`, `"c"`) }),
		},
		{
			name: "enumValueRemoved is not reported for a value spelled otherwise",
			old:  rulesEdit("spec.mode", func(s *ruleNode) { s.Enum = enumOf(`{"x":1,"y":2}`) }),
			new:  rulesEdit("spec.mode", func(s *ruleNode) { s.Enum = enumOf(`{ "y": 2, "x": 1 }`) }),
		},
		{
			name: "enumAdded", old: rulesBase(), new: rulesEdit("spec.legacy", func(s *ruleNode) { s.Enum = enumOf(`"x"`, `"y"`) }),
			want: []SchemaChange{wantBreak("spec.legacy", "enumAdded", `enum changed from none to ["x", "y"]`)},
		},
		{
			name: "enumAdded is not reported for an enum dropped", old: rulesBase(),
			new: rulesEdit("spec.mode", func(s *ruleNode) { s.Enum = nil }),
		},

		{
			name: "requiredAdded", old: rulesBase(), new: rulesEdit("spec", func(s *ruleNode) { s.Required = []string{"replicas", "legacy"} }),
			want: []SchemaChange{wantBreak("spec.legacy", "requiredAdded", "field changed from optional to required")},
		},
		{
			name: "requiredAdded in an array of objects", old: rulesBase(),
			new:  rulesEdit("spec.containers[*]", func(s *ruleNode) { s.Required = []string{"name"} }),
			want: []SchemaChange{wantBreak("spec.containers[*].name", "requiredAdded", "field changed from optional to required")},
		},
		{
			name: "requiredAdded is not reported for a requirement dropped", old: rulesBase(),
			new: rulesEdit("spec", func(s *ruleNode) { s.Required = nil }),
		},
		{
			name: "requiredAdded is not reported below a field added", old: rulesBase(),
			new: rulesEdit("spec", func(s *ruleNode) {
				s.Properties["extra"] = ruleNode{Type: "object", Required: []string{"a"}, Properties: map[string]ruleNode{"a": {Type: "string"}}}
			}),
		},

		{
			name: "defaultChanged", old: rulesBase(), new: rulesEdit("spec.replicas", func(s *ruleNode) { s.Default = rawJSON(`2`) }),
			want: []SchemaChange{wantNote("spec.replicas", "defaultChanged", "default changed from 1 to 2")},
		},
		{
			name: "defaultChanged for a default added", old: rulesBase(), new: rulesEdit("spec.legacy", func(s *ruleNode) { s.Default = rawJSON(`"x"`) }),
			want: []SchemaChange{wantNote("spec.legacy", "defaultChanged", `default changed from none to "x"`)},
		},
		{
			name: "defaultChanged for a default removed", old: rulesBase(), new: rulesEdit("spec.replicas", func(s *ruleNode) { s.Default = nil }),
			want: []SchemaChange{wantNote("spec.replicas", "defaultChanged", "default changed from 1 to none")},
		},
		{
			name: "defaultChanged is not reported for a default spelled otherwise",
			old:  rulesEdit("spec.config", func(s *ruleNode) { s.Default = rawJSON(`{"a":1,"b":[2]}`) }),
			new:  rulesEdit("spec.config", func(s *ruleNode) { s.Default = rawJSON(`{"b": [2], "a": 1}`) }),
		},

		{
			name: "maximumTightened", old: rulesBase(), new: rulesEdit("spec.replicas", func(s *ruleNode) { s.Maximum = ptrF(5) }),
			want: []SchemaChange{wantBreak("spec.replicas", "maximumTightened", "maximum changed from 10 to 5")},
		},
		{
			name: "maximumTightened for a maximum added", old: rulesBase(), new: rulesEdit("spec.weight", func(s *ruleNode) { s.Maximum = ptrF(1.5) }),
			want: []SchemaChange{wantBreak("spec.weight", "maximumTightened", "maximum changed from none to 1.5")},
		},
		{
			name: "maximumTightened for exclusiveMaximum turned on", old: rulesBase(),
			new:  rulesEdit("spec.replicas", func(s *ruleNode) { s.ExclusiveMaximum = true }),
			want: []SchemaChange{wantBreak("spec.replicas", "maximumTightened", "maximum changed from 10 to 10 (exclusive)")},
		},
		{
			name: "maximumTightened is not reported for a maximum raised", old: rulesBase(),
			new: rulesEdit("spec.replicas", func(s *ruleNode) { s.Maximum = ptrF(20) }),
		},
		{
			name: "maximumTightened is not reported for exclusiveMaximum turned off",
			old:  rulesEdit("spec.replicas", func(s *ruleNode) { s.ExclusiveMaximum = true }),
			new:  rulesBase(),
		},
		{
			name: "minimumTightened", old: rulesBase(), new: rulesEdit("spec.replicas", func(s *ruleNode) { s.Minimum = ptrF(1) }),
			want: []SchemaChange{wantBreak("spec.replicas", "minimumTightened", "minimum changed from 0 to 1")},
		},
		{
			name: "minimumTightened for a minimum added", old: rulesBase(), new: rulesEdit("spec.weight", func(s *ruleNode) { s.Minimum = ptrF(-1) }),
			want: []SchemaChange{wantBreak("spec.weight", "minimumTightened", "minimum changed from none to -1")},
		},
		{
			name: "minimumTightened for exclusiveMinimum turned on", old: rulesBase(),
			new:  rulesEdit("spec.replicas", func(s *ruleNode) { s.ExclusiveMinimum = true }),
			want: []SchemaChange{wantBreak("spec.replicas", "minimumTightened", "minimum changed from 0 to 0 (exclusive)")},
		},
		{
			name: "minimumTightened is not reported for a minimum lowered or removed", old: rulesBase(),
			new: rulesEdit("spec", func(s *ruleNode) {
				rulesApply(s, "replicas", func(s *ruleNode) { s.Minimum = ptrF(-5) })
				rulesApply(s, "weight", func(s *ruleNode) { s.Minimum = nil })
			}),
		},

		{
			name: "maxLengthTightened", old: rulesBase(), new: rulesEdit("spec.name", func(s *ruleNode) { s.MaxLength = ptrI(10) }),
			want: []SchemaChange{wantBreak("spec.name", "maxLengthTightened", "maxLength changed from 63 to 10")},
		},
		{
			name: "maxLengthTightened for a maxLength added", old: rulesBase(), new: rulesEdit("spec.legacy", func(s *ruleNode) { s.MaxLength = ptrI(5) }),
			want: []SchemaChange{wantBreak("spec.legacy", "maxLengthTightened", "maxLength changed from none to 5")},
		},
		{
			name: "maxLengthTightened is not reported for a maxLength raised", old: rulesBase(),
			new: rulesEdit("spec.name", func(s *ruleNode) { s.MaxLength = ptrI(253) }),
		},
		{
			name: "minLengthTightened", old: rulesBase(), new: rulesEdit("spec.name", func(s *ruleNode) { s.MinLength = ptrI(3) }),
			want: []SchemaChange{wantBreak("spec.name", "minLengthTightened", "minLength changed from 1 to 3")},
		},
		{
			name: "minLengthTightened for a minLength added", old: rulesBase(), new: rulesEdit("spec.legacy", func(s *ruleNode) { s.MinLength = ptrI(2) }),
			want: []SchemaChange{wantBreak("spec.legacy", "minLengthTightened", "minLength changed from none to 2")},
		},
		{
			name: "minLengthTightened is not reported for a minLength of 0 added or one lowered", old: rulesBase(),
			new: rulesEdit("spec", func(s *ruleNode) {
				rulesApply(s, "legacy", func(s *ruleNode) { s.MinLength = ptrI(0) })
				rulesApply(s, "name", func(s *ruleNode) { s.MinLength = nil })
			}),
		},
		{
			name: "maxItemsTightened", old: rulesBase(), new: rulesEdit("spec.ports", func(s *ruleNode) { s.MaxItems = ptrI(2) }),
			want: []SchemaChange{wantBreak("spec.ports", "maxItemsTightened", "maxItems changed from 4 to 2")},
		},
		{
			name: "maxItemsTightened for a maxItems added", old: rulesBase(), new: rulesEdit("spec.containers", func(s *ruleNode) { s.MaxItems = ptrI(3) }),
			want: []SchemaChange{wantBreak("spec.containers", "maxItemsTightened", "maxItems changed from none to 3")},
		},
		{
			name: "maxItemsTightened is not reported for a maxItems removed", old: rulesBase(),
			new: rulesEdit("spec.ports", func(s *ruleNode) { s.MaxItems = nil }),
		},
		{
			name: "minItemsTightened", old: rulesBase(), new: rulesEdit("spec.containers", func(s *ruleNode) { s.MinItems = ptrI(1) }),
			want: []SchemaChange{wantBreak("spec.containers", "minItemsTightened", "minItems changed from none to 1")},
		},
		{
			name: "minItemsTightened is not reported for a minItems lowered", old: rulesBase(),
			new: rulesEdit("spec.ports", func(s *ruleNode) { s.MinItems = ptrI(0) }),
		},
		{
			name: "maxPropertiesTightened", old: rulesBase(), new: rulesEdit("spec.labels", func(s *ruleNode) { s.MaxProperties = ptrI(3) }),
			want: []SchemaChange{wantBreak("spec.labels", "maxPropertiesTightened", "maxProperties changed from 5 to 3")},
		},
		{
			name: "maxPropertiesTightened is not reported for a maxProperties removed", old: rulesBase(),
			new: rulesEdit("spec.labels", func(s *ruleNode) { s.MaxProperties = nil }),
		},
		{
			name: "minPropertiesTightened", old: rulesBase(), new: rulesEdit("spec.labels", func(s *ruleNode) { s.MinProperties = ptrI(1) }),
			want: []SchemaChange{wantBreak("spec.labels", "minPropertiesTightened", "minProperties changed from none to 1")},
		},
		{
			name: "minPropertiesTightened is not reported for a minProperties of 0 added", old: rulesBase(),
			new: rulesEdit("spec.labels", func(s *ruleNode) { s.MinProperties = ptrI(0) }),
		},

		{
			name: "patternChanged", old: rulesBase(), new: rulesEdit("spec.name", func(s *ruleNode) { s.Pattern = "^[a-z]{1,5}$" }),
			want: []SchemaChange{wantBreak("spec.name", "patternChanged", `pattern changed from "^[a-z]+$" to "^[a-z]{1,5}$"`)},
		},
		{
			name: "patternChanged for a pattern added", old: rulesBase(), new: rulesEdit("spec.legacy", func(s *ruleNode) { s.Pattern = "^x" }),
			want: []SchemaChange{wantBreak("spec.legacy", "patternChanged", `pattern changed from none to "^x"`)},
		},
		{
			name: "patternChanged is not reported for a pattern removed", old: rulesBase(),
			new: rulesEdit("spec.name", func(s *ruleNode) { s.Pattern = "" }),
		},
		{
			name: "formatChanged", old: rulesBase(), new: rulesEdit("spec.endpoint", func(s *ruleNode) { s.Format = "hostname" }),
			want: []SchemaChange{wantBreak("spec.endpoint", "formatChanged", `format changed from "uri" to "hostname"`)},
		},
		{
			name: "formatChanged for a format added", old: rulesBase(), new: rulesEdit("spec.legacy", func(s *ruleNode) { s.Format = "date-time" }),
			want: []SchemaChange{wantBreak("spec.legacy", "formatChanged", `format changed from none to "date-time"`)},
		},
		{
			name: "formatChanged is not reported for a format removed", old: rulesBase(),
			new: rulesEdit("spec.endpoint", func(s *ruleNode) { s.Format = "" }),
		},

		{
			name: "validationRuleAdded", old: rulesBase(),
			new: rulesEdit("spec", func(s *ruleNode) {
				s.XValidations = append(s.XValidations, apiextensionsv1.ValidationRule{Rule: "self.replicas <= 10"})
			}),
			want: []SchemaChange{wantBreak("spec", "validationRuleAdded", `x-kubernetes-validations rule "self.replicas <= 10" added`)},
		},
		{
			name: "validationRuleAdded is not reported for a rule's message changed", old: rulesBase(),
			new: rulesEdit("spec", func(s *ruleNode) { s.XValidations[0].Message = "replicas must not be negative" }),
		},
		{
			name: "validationRuleRemoved", old: rulesBase(), new: rulesEdit("spec", func(s *ruleNode) { s.XValidations = nil }),
			want: []SchemaChange{wantNote("spec", "validationRuleRemoved", `x-kubernetes-validations rule "self.replicas >= 0" removed`)},
		},

		{
			name: "nullableRemoved", old: rulesBase(), new: rulesEdit("spec.note", func(s *ruleNode) { s.Nullable = false }),
			want: []SchemaChange{wantBreak("spec.note", "nullableRemoved", "nullable changed from true to false")},
		},
		{
			name: "nullableRemoved is not reported for nullable added", old: rulesBase(),
			new: rulesEdit("spec.legacy", func(s *ruleNode) { s.Nullable = true }),
		},
		{
			name: "preserveUnknownFieldsRemoved", old: rulesBase(), new: rulesEdit("spec.config", func(s *ruleNode) { s.XPreserveUnknownFields = nil }),
			want: []SchemaChange{wantBreak("spec.config", "preserveUnknownFieldsRemoved", "x-kubernetes-preserve-unknown-fields changed from true to false")},
		},
		{
			name: "fieldGetsSchema: a field under preserve-unknown-fields gets a schema", old: rulesBase(),
			new: rulesEdit("spec.config", func(s *ruleNode) {
				s.Properties = map[string]ruleNode{"mode": {Type: "object", Properties: map[string]ruleNode{"name": {Type: "string"}}}}
			}),
			want: []SchemaChange{wantBreak("spec.config.mode", "fieldGetsSchema", "field kept unchecked by x-kubernetes-preserve-unknown-fields now has a schema (object): what objects hold here that it does not list is dropped, a value of another form refused")},
		},
		{
			name: "fieldGetsSchema is not reported for a schema that keeps anything", old: rulesBase(),
			new: rulesEdit("spec.config", func(s *ruleNode) {
				s.Properties = map[string]ruleNode{"free": {XPreserveUnknownFields: ptrB(true)}}
			}),
		},
		{
			name: "preserveUnknownFieldsRemoved is not reported for it added", old: rulesBase(),
			new: rulesEdit("spec.template", func(s *ruleNode) { s.XPreserveUnknownFields = ptrB(true) }),
		},

		{
			name: "listTypeChanged", old: rulesBase(), new: rulesEdit("spec.ports", func(s *ruleNode) { s.XListType, s.XListMapKeys = ptrS("atomic"), nil }),
			want: []SchemaChange{wantBreak("spec.ports", "listTypeChanged", "x-kubernetes-list-type changed from map [name] to atomic")},
		},
		{
			name: "listTypeChanged for the map keys", old: rulesBase(),
			new:  rulesEdit("spec.ports", func(s *ruleNode) { s.XListMapKeys = []string{"name", "port"} }),
			want: []SchemaChange{wantBreak("spec.ports", "listTypeChanged", "x-kubernetes-list-type changed from map [name] to map [name, port]")},
		},
		{
			name: "listTypeChanged is not reported for atomic spelled out or map keys reordered",
			old:  rulesEdit("spec.ports", func(s *ruleNode) { s.XListMapKeys = []string{"name", "port"} }),
			new: rulesEdit("spec", func(s *ruleNode) {
				rulesApply(s, "ports", func(s *ruleNode) { s.XListMapKeys = []string{"port", "name"} })
				rulesApply(s, "containers", func(s *ruleNode) { s.XListType = ptrS("atomic") })
			}),
		},
		{
			name: "mapTypeChanged", old: rulesBase(), new: rulesEdit("spec.labels", func(s *ruleNode) { s.XMapType = ptrS("atomic") }),
			want: []SchemaChange{wantBreak("spec.labels", "mapTypeChanged", "x-kubernetes-map-type changed from granular to atomic")},
		},
		{
			name: "mapTypeChanged is not reported for granular spelled out", old: rulesBase(),
			new: rulesEdit("spec.labels", func(s *ruleNode) { s.XMapType = ptrS("granular") }),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SchemaChanges(tc.old, tc.new); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("SchemaChanges() =\n%s\nwant\n%s", changeLines(got), changeLines(tc.want))
			}
		})
	}
}

// TestSchemaChangesOrder makes several changes at once, some at the same
// path and two by the same rule at one path, and wants the same list every
// run although the walker reads Go maps.
func TestSchemaChangesOrder(t *testing.T) {
	s := rulesBase()
	rulesApply(s, "spec", func(s *ruleNode) {
		delete(s.Properties, "legacy")
		s.Required = append(s.Required, "legacy")
		s.XValidations = append(s.XValidations,
			apiextensionsv1.ValidationRule{Rule: "self.replicas <= 10"},
			apiextensionsv1.ValidationRule{Rule: "has(self.name)"},
		)
	})
	rulesApply(s, "spec.replicas", func(s *ruleNode) { s.Maximum, s.Default = ptrF(5), nil })
	rulesApply(s, "spec.containers[*]", dropProperty("image"))
	rulesApply(s, "spec.mode", func(s *ruleNode) { s.Type = "integer" })

	want := []SchemaChange{
		wantBreak("spec", "validationRuleAdded", `x-kubernetes-validations rule "has(self.name)" added`),
		wantBreak("spec", "validationRuleAdded", `x-kubernetes-validations rule "self.replicas <= 10" added`),
		wantBreak("spec.containers[*].image", "fieldRemoved", "field removed (was string, now absent)"),
		wantBreak("spec.legacy", "fieldRemoved", "field removed (was string, now absent)"),
		wantBreak("spec.legacy", "requiredAdded", "field changed from optional to required"),
		wantBreak("spec.mode", "typeChanged", "type changed from string to integer"),
		wantNote("spec.replicas", "defaultChanged", "default changed from 1 to none"),
		wantBreak("spec.replicas", "maximumTightened", "maximum changed from 10 to 5"),
	}
	for range 20 {
		if got := SchemaChanges(rulesBase(), s); !reflect.DeepEqual(got, want) {
			t.Fatalf("SchemaChanges() =\n%s\nwant\n%s", changeLines(got), changeLines(want))
		}
	}
}

func changeLines(cs []SchemaChange) string {
	lines := make([]string, len(cs))
	for i, c := range cs {
		kind := "note"
		if c.Breaking {
			kind = "breaking"
		}
		lines[i] = "  " + strings.Join([]string{c.Path, c.Rule, kind, c.Message}, " | ")
	}
	if len(lines) == 0 {
		return "  (none)"
	}
	return strings.Join(lines, "\n")
}
