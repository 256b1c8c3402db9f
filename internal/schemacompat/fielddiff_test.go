package schemacompat

import (
	"encoding/json"
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

func TestDiffFields(t *testing.T) {
	parse := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	containers := func(changed int) string {
		s := `{"spec":{"containers":[`
		for i := range 20 {
			if i > 0 {
				s += ","
			}
			image := fmt.Sprintf("registry.example.com/app-%d:v1", i)
			if i == changed {
				image = "registry.example.com/app:v2"
			}
			s += fmt.Sprintf(`{"name":"c%d","image":%q}`, i, image)
		}
		return s + `]}}`
	}
	for _, tc := range []struct {
		name, a, b string
		want       []results.FieldDiff
	}{
		{"equal", `{"a":1}`, `{"a":1}`, nil},
		{"one image among twenty containers", containers(-1), containers(3),
			[]results.FieldDiff{{Path: "spec.containers[3].image", Before: `"registry.example.com/app-3:v1"`, After: `"registry.example.com/app:v2"`}}},
		{"a field gone", `{"spec":{"legacy":"keep","host":"h"}}`, `{"spec":{"host":"h"}}`, []results.FieldDiff{{Path: "spec.legacy", Before: `"keep"`, After: results.Absent}}},
		{"a list grown", `{"l":[1]}`, `{"l":[1,2]}`, []results.FieldDiff{{Path: "l[1]", Before: results.Absent, After: "2"}}},
		{"keys with dots and slashes", `{"metadata":{"annotations":{"a.b/c":"x"}}}`, `{"metadata":{"annotations":{"a.b/c":"y"}}}`,
			[]results.FieldDiff{{Path: "metadata.annotations['a.b/c']", Before: `"x"`, After: `"y"`}}},
		{"a type change shows whole values", `{"s":{"a":1}}`, `{"s":"x"}`, []results.FieldDiff{{Path: "s", Before: `{"a":1}`, After: `"x"`}}},
	} {
		got := DiffFields("", parse(tc.a), parse(tc.b), nil)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s:\n got %v\nwant %v", tc.name, got, tc.want)
		}
	}
}

// A list the schema keys (x-kubernetes-list-type: map) is diffed by its
// keys: an element moved or inserted is not a change of every index after it.
func TestDiffFieldsByListMapKeys(t *testing.T) {
	mapType := "map"
	s := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"ports": {Type: "array", XListType: &mapType, XListMapKeys: []string{"name"},
			Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}}}
	a := map[string]any{"ports": []any{map[string]any{"name": "http", "port": 80.0}, map[string]any{"name": "https", "port": 443.0}}}
	b := map[string]any{"ports": []any{map[string]any{"name": "https", "port": 8443.0}, map[string]any{"name": "http", "port": 80.0}}}
	got := DiffFields("", a, b, s)
	want := []results.FieldDiff{{Path: "ports[name=https].port", Before: "443", After: "8443"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// A file's numbers decode as json.Number or int64, a converter's as
// float64 or int64: the same number is no difference, and integers are
// compared exactly.
func TestDiffFieldsComparesNumbersByValue(t *testing.T) {
	for _, c := range []struct {
		a, b any
		same bool
	}{
		{json.Number("3"), float64(3), true},
		{json.Number("3"), int64(3), true},
		{int64(3), float64(3), true},
		{json.Number("0.5"), float64(0.5), true},
		{json.Number("3.0"), int64(3), true},
		{json.Number("9007199254740993"), int64(9007199254740993), true},
		{int64(9007199254740993), float64(9007199254740992), false},
		{json.Number("9007199254740993"), json.Number("9007199254740992"), false},
		{json.Number("3"), "3", false},
		{int64(3), int64(4), false},
	} {
		diff := DiffFields("", map[string]any{"n": c.a}, map[string]any{"n": c.b}, nil)
		if (len(diff) == 0) != c.same {
			t.Errorf("%T %v vs %T %v: diff %v, want same=%v", c.a, c.a, c.b, c.b, diff, c.same)
		}
	}
}
