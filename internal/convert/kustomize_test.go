package convert

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A selector matches as kustomize matches a patch target: every field
// given must match, name and namespace as anchored regular expressions.
func TestSelectorSelectsAsKustomize(t *testing.T) {
	obj := map[string]any{"apiVersion": "conv.example.com/v1beta1", "kind": "Widget",
		"metadata": map[string]any{"name": "large-1", "namespace": "shop", "labels": map[string]any{"tier": "web"}}}
	gvk := schema.GroupVersionKind{Group: "conv.example.com", Version: "v1beta1", Kind: "Widget"}
	for _, c := range []struct {
		name string
		s    selector
		want bool
	}{
		{"version only", selector{gvk: schema.GroupVersionKind{Version: "v1beta1"}}, true},
		{"another version", selector{gvk: schema.GroupVersionKind{Version: "v1"}}, false},
		{"another group", selector{gvk: schema.GroupVersionKind{Group: "other.example.com", Version: "v1beta1"}}, false},
		{"name as a regular expression", selector{gvk: gvk, name: "large-.*"}, true},
		{"name anchored", selector{gvk: gvk, name: "large"}, false},
		{"namespace", selector{gvk: gvk, namespace: "default"}, false},
		{"label selector", selector{gvk: gvk, labels: "tier in (web,db)"}, true},
		{"label selector not matching", selector{gvk: gvk, labels: "tier=db"}, false},
		{"annotation selector on none", selector{gvk: gvk, annotations: "a=b"}, false},
	} {
		if got := c.s.selects(obj); got != c.want {
			t.Errorf("%s: selects = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestWithAPIVersionChangesOnlyThatLine(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "conv.example.com", Version: "v1beta1", Kind: "Widget"}
	in := "# keep conv.example.com/v1beta1\napiVersion: conv.example.com/v1beta1 # pinned\nkind: Widget\n"
	want := "# keep conv.example.com/v1beta1\napiVersion: conv.example.com/v1 # pinned\nkind: Widget\n"
	if got := withAPIVersion(in, gvk, "v1"); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
