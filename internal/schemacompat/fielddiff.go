package schemacompat

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strings"

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
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []results.FieldDiff
		keys := slices.Sorted(maps.Keys(am))
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = append(out, DiffFields(child(path, k), value(am, k), value(bm, k), property(s, k))...)
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok {
		if s != nil && s.XListType != nil && *s.XListType == "map" && len(s.XListMapKeys) > 0 {
			return diffByKeys(path, al, bl, s)
		}
		var out []results.FieldDiff
		for i := range max(len(al), len(bl)) {
			out = append(out, DiffFields(fmt.Sprintf("%s[%d]", path, i), index(al, i), index(bl, i), items(s))...)
		}
		return out
	}
	if sameValue(a, b) {
		return nil
	}
	return []results.FieldDiff{{Path: path, Before: show(a), After: show(b)}}
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

// diffByKeys pairs the elements of two map-type lists by their keys.
func diffByKeys(path string, a, b []any, s *apiextensionsv1.JSONSchemaProps) []results.FieldDiff {
	keyOf := func(e any) string {
		m, _ := e.(map[string]any)
		parts := make([]string, len(s.XListMapKeys))
		for i, k := range s.XListMapKeys {
			parts[i] = fmt.Sprintf("%s=%v", k, m[k])
		}
		return strings.Join(parts, ",")
	}
	byKey := map[string]any{}
	for _, e := range b {
		byKey[keyOf(e)] = e
	}
	var out []results.FieldDiff
	seen := map[string]bool{}
	for _, e := range a {
		k := keyOf(e)
		seen[k] = true
		other, ok := byKey[k]
		if !ok {
			other = absent{}
		}
		out = append(out, DiffFields(fmt.Sprintf("%s[%s]", path, k), e, other, items(s))...)
	}
	for _, e := range b {
		if k := keyOf(e); !seen[k] {
			out = append(out, DiffFields(fmt.Sprintf("%s[%s]", path, k), absent{}, e, items(s))...)
		}
	}
	return out
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
