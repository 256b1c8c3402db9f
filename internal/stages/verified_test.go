package stages

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// verify's record holds only for the CRD it was made on: the same storage
// version, schemas, conversion and generation, with the objects it covered.
func TestCheckFor(t *testing.T) {
	checked := func(rec Verification, edit func(*apiextensionsv1.CustomResourceDefinition)) *apiextensionsv1.CustomResourceDefinition {
		c := crd([]string{"v1beta1"}, "v1beta1:served,storage", "v1:served")
		if rec.Fingerprint == "" {
			rec.Fingerprint = Fingerprint(c, "v1beta1", "v1")
		}
		k, v := CheckAnnotation(rec, "v1")
		c.Annotations = map[string]string{k: v}
		if edit != nil {
			edit(c)
		}
		return c
	}
	good := Verification{From: "v1beta1", Generation: 3, Objects: 10, ObjectSet: "abc"}
	for _, tc := range []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		want bool
	}{
		{"holds", checked(good, nil), true},
		{"none recorded", crd([]string{"v1beta1"}, "v1beta1:served,storage", "v1:served"), false},
		{"another storage version since", checked(good, func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Storage, c.Spec.Versions[1].Storage = false, true
		}), false},
		{"another generation", checked(good, func(c *apiextensionsv1.CustomResourceDefinition) { c.Generation = 4 }), false},
		{"schema changed", checked(good, func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[1].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}
		}), false},
		{"no object set", checked(Verification{From: "v1beta1", Generation: 3}, nil), false},
		{"bridge record is not verify's", verified(crd([]string{"v1beta1"}, "v1beta1:served,storage", "v1:served"), "v1", "v1beta1", nil), false},
	} {
		if _, got := CheckFor(tc.crd, "v1"); got != tc.want {
			t.Errorf("%s: CheckFor = %v, want %v", tc.name, got, tc.want)
		}
	}
}
