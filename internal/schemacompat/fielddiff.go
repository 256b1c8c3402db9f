package schemacompat

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// DiffFields walks two decoded JSON values and lists every leaf that
// differs: into objects by key and into lists by index, or, where the
// schema declares x-kubernetes-list-type: map, by the list's keys
// (spec.containers[name=web].image), so one changed image among twenty
// containers is one line, not the whole list twice. s is the schema at
// path, or nil.
func DiffFields(path string, a, b any, s *apiextensionsv1.JSONSchemaProps) []results.FieldDiff {
	var leaves []leaf
	walk(path, a, b, []*apiextensionsv1.JSONSchemaProps{s}, false, &leaves)
	var out []results.FieldDiff
	for _, l := range leaves {
		out = append(out, l.diff)
	}
	return out
}

// sameValue compares two leaves as the API server sees them: numbers by
// value, whatever Go type decoded them (a file's json.Number, a
// converter's float64 or int64), and exactly, so 2^53+1 is not 2^53.
func sameValue(a, b any) bool {
	x, xok := number(a)
	y, yok := number(b)
	if xok && yok {
		return x.Cmp(y) == 0
	}
	return reflect.DeepEqual(a, b)
}

// number is v's exact value when v is a number.
func number(v any) (*big.Rat, bool) {
	r := new(big.Rat)
	switch n := v.(type) {
	case json.Number:
		return r.SetString(n.String())
	case int64:
		return r.SetInt64(n), true
	case int:
		return r.SetInt64(int64(n)), true
	case float64:
		if math.IsInf(n, 0) || math.IsNaN(n) {
			return nil, false
		}
		return r.SetFloat64(n), true
	}
	return nil, false
}

func property(s *apiextensionsv1.JSONSchemaProps, k string) *apiextensionsv1.JSONSchemaProps {
	if s == nil {
		return nil
	}
	if p, ok := s.Properties[k]; ok {
		return &p
	}
	if s.AdditionalProperties != nil {
		return s.AdditionalProperties.Schema
	}
	return nil
}

func items(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if s == nil || s.Items == nil {
		return nil
	}
	return s.Items.Schema
}

type absent struct{}

func value(m map[string]any, k string) any {
	if v, ok := m[k]; ok {
		return v
	}
	return absent{}
}

func index(l []any, i int) any {
	if i < len(l) {
		return l[i]
	}
	return absent{}
}

func show(v any) string {
	if _, ok := v.(absent); ok {
		return results.Absent
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}
