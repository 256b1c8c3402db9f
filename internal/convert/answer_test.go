package convert

import (
	"strings"
	"testing"
)

func TestCheckAnswerAsTheAPIServerDoes(t *testing.T) {
	sent := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "a", "namespace": "ns", "uid": "u1"}}
	answer := func(edit func(m, meta map[string]any)) map[string]any {
		m := map[string]any{"apiVersion": "example.com/v2", "kind": "Widget",
			"metadata": map[string]any{"name": "a", "namespace": "ns", "uid": "u1"}}
		edit(m, m["metadata"].(map[string]any))
		return m
	}
	cases := []struct {
		name string
		out  map[string]any
		want string
	}{
		{"right", answer(func(_, _ map[string]any) {}), ""},
		{"labels may change", answer(func(_, md map[string]any) { md["labels"] = map[string]any{"tier": "web"} }), ""},
		{"other version", answer(func(m, _ map[string]any) { m["apiVersion"] = "example.com/v1" }), "must be at example.com/v2"},
		{"other kind", answer(func(m, _ map[string]any) { m["kind"] = "Gadget" }), "same kind"},
		{"renamed", answer(func(_, md map[string]any) { md["name"] = "b" }), "same name"},
		{"moved", answer(func(_, md map[string]any) { md["namespace"] = "other" }), "same namespace"},
		{"other uid", answer(func(_, md map[string]any) { md["uid"] = "u2" }), "same uid"},
		{"no metadata", answer(func(m, _ map[string]any) { delete(m, "metadata") }), "same name"},
		{"invalid label", answer(func(_, md map[string]any) { md["labels"] = map[string]any{"a b": "c"} }), "metadata.labels"},
		{"label not a string", answer(func(_, md map[string]any) { md["labels"] = map[string]any{"a": 1} }), "must be a string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkAnswer(sent, tc.out, "example.com/v2")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestRestoreMetaKeepsOnlyLabelsAndAnnotations(t *testing.T) {
	original := map[string]any{"metadata": map[string]any{"name": "a", "annotations": map[string]any{"x": "1"}, "finalizers": []any{"f"}}}
	converted := map[string]any{"apiVersion": "example.com/v2", "spec": map[string]any{"host": "h"},
		"metadata": map[string]any{"name": "a", "labels": map[string]any{"new": "yes"}, "finalizers": []any{"other"}}}
	got := restoreMeta(original, converted)
	md := got["metadata"].(map[string]any)
	if _, ok := md["annotations"]; ok {
		t.Errorf("annotations the converter dropped are kept: %v", md)
	}
	if md["labels"].(map[string]any)["new"] != "yes" {
		t.Errorf("the converter's labels are lost: %v", md)
	}
	if md["finalizers"].([]any)[0] != "f" {
		t.Errorf("metadata other than labels and annotations came from the converter: %v", md)
	}
	if got["spec"].(map[string]any)["host"] != "h" {
		t.Errorf("the converted spec is lost: %v", got)
	}
}
