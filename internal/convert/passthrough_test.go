package convert

import (
	"context"
	"strings"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// partsCRD: Widget's v1 drops spec.legacy and holds spec.size to at most
// 5; Gadget has only v1beta1. The group defines no Pool.
const partsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.parts.example.com
spec:
  group: parts.example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              legacy: {type: string}
  - name: v1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, maximum: 5}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.parts.example.com
spec:
  group: parts.example.com
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`

func object(apiVersion, kind, spec string) string {
	return "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n  name: one\n  namespace: default\nspec:\n" + spec
}

// What convert leaves as it is, it says why, and checks it as the API
// server would take it as it stays.
func TestConvertSaysWhatItLeavesAndWhy(t *testing.T) {
	ctx := context.Background()
	found, err := manifest.ReadCRDs(ctx, []string{manifest.Stdin}, false, strings.NewReader(partsCRD))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		in     string
		reason results.NotConvertedReason // "" when converted or other
		other  bool
		errors []string
	}{
		{"converted", object("parts.example.com/v1beta1", "Widget", "  size: 1\n"), "", false, nil},
		{"at v1 and valid", object("parts.example.com/v1", "Widget", "  size: 2\n"), results.AtTarget, false, nil},
		{"at v1 with a field v1 does not declare", object("parts.example.com/v1", "Widget", "  size: 2\n  legacy: old\n"),
			results.RejectedBySchema, false, []string{"spec.legacy: field not declared in schema"}},
		{"at v1 and invalid", object("parts.example.com/v1", "Widget", "  size: 10\n"),
			results.RejectedBySchema, false, []string{"spec.size: Invalid value: 10: spec.size in body should be less than or equal to 5"}},
		{"converted and invalid", object("parts.example.com/v1beta1", "Widget", "  size: 10\n"),
			results.RejectedBySchema, false, []string{"should be less than or equal to 5"}},
		{"its CRD has no v1, valid as it is", object("parts.example.com/v1beta1", "Gadget", "  size: 10\n"), results.TargetMissing, false, nil},
		{"its CRD has no v1, nor its version", object("parts.example.com/v1alpha1", "Gadget", "  size: 10\n"),
			results.RejectedBySchema, false, []string{"gadgets.parts.example.com does not serve v1alpha1"}},
		{"a kind its group's CRDs lack", object("parts.example.com/v1beta1", "Pool", "  size: 1\n"), results.NoCRD, false, nil},
		{"another group", object("apps/v1", "Deployment", "  replicas: 1\n"), "", true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A converted Widget beside it: the input always has a custom
			// resource to convert.
			in := object("parts.example.com/v1beta1", "Widget", "  size: 3\n") + "---\n" + c.in
			files, err := manifest.ReadFiles(ctx, []string{manifest.Stdin}, false, strings.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Convert(ctx, files.Files, Options{To: "v1", CRDs: found.CRDs})
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 1}[c.other]; res.Others != want {
				t.Errorf("others = %d, want %d", res.Others, want)
			}
			if c.reason == "" {
				if len(res.NotConverted) != 0 {
					t.Fatalf("not converted: %+v, want none", res.NotConverted)
				}
				return
			}
			if len(res.NotConverted) != 1 {
				t.Fatalf("not converted: %+v, want the second object", res.NotConverted)
			}
			got := res.NotConverted[0]
			if got.Reason != c.reason || !strings.Contains(got.Where, ":9: document 2") || got.Name != "one" || got.Namespace != "default" {
				t.Errorf("got %+v, want reason %s at line 9, document 2", got, c.reason)
			}
			if len(got.Errors) != len(c.errors) {
				t.Fatalf("errors %q, want %q", got.Errors, c.errors)
			}
			for i, e := range c.errors {
				if !strings.Contains(got.Errors[i], e) {
					t.Errorf("error %q, want %q", got.Errors[i], e)
				}
			}
			if want := map[bool]int{true: 1}[c.reason.Attention()]; res.Attention() != want {
				t.Errorf("attention = %d, want %d", res.Attention(), want)
			}
		})
	}
}
