package schemacompat

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// TripDiff is what an object's round trip changed, told apart by whether a
// value was lost: a change is a loss only where one is (lifecycle.md rule 28).
type TripDiff struct {
	// Lost: a value read is gone or another one came back.
	Lost []results.FieldDiff
	// Defaulted: absent as read, back with exactly the value a schema on
	// the way gives it by default: a default the new version adds.
	Defaulted []results.FieldDiff
	// EmptyDropped: "", [] or {} as read, back absent, where absence reads
	// the same (no default, not required, not nullable): docs/safety.md.
	EmptyDropped []results.FieldDiff
}

// RoundTripDiff compares an object as read with what came back from its
// round trip. at is the schema of the version read (it also keys lists);
// along are the schemas of the other versions on the way (the storage
// version's), whose defaults the API server fills in too.
func RoundTripDiff(read, back any, at *apiextensionsv1.JSONSchemaProps, along ...*apiextensionsv1.JSONSchemaProps) TripDiff {
	var leaves []leaf
	walk("", read, back, append([]*apiextensionsv1.JSONSchemaProps{at}, along...), false, &leaves)
	var d TripDiff
	for _, l := range leaves {
		switch {
		case l.defaulted():
			d.Defaulted = append(d.Defaulted, l.diff)
		case l.emptyDropped():
			d.EmptyDropped = append(d.EmptyDropped, l.diff)
		default:
			d.Lost = append(d.Lost, l.diff)
		}
	}
	return d
}

// leaf is one difference with the schemas at its path, the version read's
// first (nil where a schema says nothing there).
type leaf struct {
	diff    results.FieldDiff
	a, b    any
	schemas []*apiextensionsv1.JSONSchemaProps
	// required: the version read's schema requires the field of its parent.
	required bool
}

// defaulted: absent as read, and back with exactly what a schema's default
// there gives, nested defaults included, as the API server defaults.
func (l leaf) defaulted() bool {
	if _, ok := l.a.(absent); !ok {
		return false
	}
	for _, s := range l.schemas {
		if s == nil || s.Default == nil {
			continue
		}
		var v any
		if json.Unmarshal(s.Default.Raw, &v) != nil {
			continue
		}
		if len(DiffFields("", applyDefaults(v, s), l.b, nil)) == 0 {
			return true
		}
	}
	return false
}

// emptyDropped: an empty value back absent, where no schema on the way
// gives the field a default (absent would read as that default, not as
// empty), the version read does not require it (the next write of the
// object would fail) and does not make it nullable (presence is meaningful).
func (l leaf) emptyDropped() bool {
	if _, ok := l.b.(absent); !ok || !isEmpty(l.a) || l.required {
		return false
	}
	for _, s := range l.schemas {
		if s != nil && s.Default != nil {
			return false
		}
	}
	return l.schemas[0] == nil || !l.schemas[0].Nullable
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// walk lists every leaf that differs (DiffFields), with every schema on
// the way beside the values.
func walk(path string, a, b any, ss []*apiextensionsv1.JSONSchemaProps, required bool, out *[]leaf) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := slices.Sorted(maps.Keys(am))
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			walk(child(path, k), value(am, k), value(bm, k), each(ss, func(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps { return property(s, k) }),
				ss[0] != nil && slices.Contains(ss[0].Required, k), out)
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok {
		// Keyed by the version read's schema: its list keys pair the elements.
		if s := ss[0]; s != nil && s.XListType != nil && *s.XListType == "map" && len(s.XListMapKeys) > 0 {
			walkByKeys(path, al, bl, ss, out)
			return
		}
		is := each(ss, items)
		for i := range max(len(al), len(bl)) {
			walk(fmt.Sprintf("%s[%d]", path, i), index(al, i), index(bl, i), is, false, out)
		}
		return
	}
	if sameValue(a, b) {
		return
	}
	*out = append(*out, leaf{diff: results.FieldDiff{Path: path, Before: show(a), After: show(b)}, a: a, b: b, schemas: ss, required: required})
}

func each(ss []*apiextensionsv1.JSONSchemaProps, f func(*apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps) []*apiextensionsv1.JSONSchemaProps {
	out := make([]*apiextensionsv1.JSONSchemaProps, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

// walkByKeys pairs the elements of two map-type lists by their keys.
func walkByKeys(path string, a, b []any, ss []*apiextensionsv1.JSONSchemaProps, out *[]leaf) {
	keys := ss[0].XListMapKeys
	keyOf := func(e any) string {
		m, _ := e.(map[string]any)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s=%v", k, m[k])
		}
		return strings.Join(parts, ",")
	}
	byKey := map[string]any{}
	for _, e := range b {
		byKey[keyOf(e)] = e
	}
	is := each(ss, items)
	seen := map[string]bool{}
	for _, e := range a {
		k := keyOf(e)
		seen[k] = true
		other, ok := byKey[k]
		if !ok {
			other = absent{}
		}
		walk(fmt.Sprintf("%s[%s]", path, k), e, other, is, false, out)
	}
	for _, e := range b {
		if k := keyOf(e); !seen[k] {
			walk(fmt.Sprintf("%s[%s]", path, k), absent{}, e, is, false, out)
		}
	}
}

// applyDefaults fills the defaults of s's properties into v, as the API
// server's structural defaulting does (a default's own fields included).
func applyDefaults(v any, s *apiextensionsv1.JSONSchemaProps) any {
	if s == nil {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		for k, p := range s.Properties {
			if _, ok := x[k]; ok || p.Default == nil {
				continue
			}
			var d any
			if json.Unmarshal(p.Default.Raw, &d) == nil {
				x[k] = d
			}
		}
		for k, e := range x {
			x[k] = applyDefaults(e, property(s, k))
		}
	case []any:
		for i, e := range x {
			x[i] = applyDefaults(e, items(s))
		}
	}
	return v
}
