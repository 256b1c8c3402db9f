package schemacompat

import (
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestEveryFieldObject(t *testing.T) {
	for _, tc := range []struct {
		name, schema, want string
	}{
		{"every leaf, optional ones too",
			`{"type":"object","properties":{"spec":{"type":"object","properties":{
				"size":{"type":"integer","minimum":3},"mode":{"type":"string","enum":["Fast","Slow"]},
				"on":{"type":"boolean"},"port":{"x-kubernetes-int-or-string":true},"legacy":{"type":"string"}}},
				"status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}}`,
			`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"p","namespace":"default"},"spec":{"legacy":"a","mode":"Fast","on":false,"port":0,"size":3},"status":{"ready":false}}`},
		{"an item of each array, a key of each map",
			`{"type":"object","properties":{"spec":{"type":"object","properties":{
				"ports":{"type":"array","items":{"type":"object","properties":{"port":{"type":"integer"}}}},
				"labels":{"type":"object","additionalProperties":{"type":"object","properties":{"v":{"type":"string"}}}}}}}}`,
			`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"p","namespace":"default"},"spec":{"labels":{"key":{"v":"a"}},"ports":[{"port":0}]}}`},
		{"an embedded object's own apiVersion, kind and metadata left to the server",
			`{"type":"object","properties":{"metadata":{"type":"object"},"spec":{"type":"object","properties":{
				"template":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{
					"apiVersion":{"type":"string"},"kind":{"type":"string"},"metadata":{"type":"object"},"data":{"type":"string"}}}}}}}`,
			`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"p","namespace":"default"},"spec":{"template":{"data":"a"}}}`},
		{"no schema", `{}`, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"p","namespace":"default"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var schema apiextensionsv1.JSONSchemaProps
			if err := json.Unmarshal([]byte(tc.schema), &schema); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(EveryFieldObject(widgets([]string{"v1"}, &schema), "v1", "p", "default"))
			if string(got) != tc.want {
				t.Errorf("got\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}

// A schema nested past the bound ends in a placeholder, not a stack overflow.
func TestEveryFieldObjectDepthIsBounded(t *testing.T) {
	leaf := apiextensionsv1.JSONSchemaProps{Type: "string"}
	s := leaf
	for range 100 {
		s = apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"a": s}}
	}
	obj := EveryFieldObject(widgets([]string{"v1"}, &s), "v1", "p", "default")
	depth := 0
	for m, ok := obj["a"].(map[string]any); ok; m, ok = m["a"].(map[string]any) {
		depth++
	}
	if depth < maxEveryFieldDepth-2 || depth > maxEveryFieldDepth {
		t.Errorf("nested %d deep, want about %d", depth, maxEveryFieldDepth)
	}
}
