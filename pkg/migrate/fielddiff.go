package migrate

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// FieldDiff is one field that differs between two forms of an object.
type FieldDiff struct {
	Path   string `json:"path"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// diffFields walks two decoded JSON values and lists every leaf that
// differs, by dotted path, "<absent>" where one side lacks it.
func diffFields(path string, a, b any) []FieldDiff {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		slices.Sort(sorted)
		var out []FieldDiff
		for _, k := range sorted {
			out = append(out, diffFields(join(path, k), value(am, k), value(bm, k))...)
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	return []FieldDiff{{Path: path, Before: show(a), After: show(b)}}
}

type absent struct{}

func value(m map[string]any, k string) any {
	if v, ok := m[k]; ok {
		return v
	}
	return absent{}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func show(v any) string {
	if _, ok := v.(absent); ok {
		return "<absent>"
	}
	s := fmt.Sprintf("%v", v)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return strings.ReplaceAll(s, "\n", " ")
}
