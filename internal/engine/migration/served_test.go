package migration

import (
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestServingChanges(t *testing.T) {
	crd := func(versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: versions}}
	}
	v := func(name string, served bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served}
	}
	for _, tc := range []struct {
		name          string
		before, after *apiextensionsv1.CustomResourceDefinition
		want          string
	}{
		{"introduced: the new version begins serving", crd(v("v1beta1", true)), crd(v("v1beta1", true), v("v1", true)), "[v1:true]"},
		{"introduced unserved: nothing to wait for", crd(v("v1beta1", true)), crd(v("v1beta1", true), v("v1", false)), "[]"},
		{"blocked: the old version stops serving", crd(v("v1beta1", true), v("v1", true)), crd(v("v1beta1", false), v("v1", true)), "[v1beta1:false]"},
		{"rolled back from blocked: served again", crd(v("v1beta1", false), v("v1", true)), crd(v("v1beta1", true), v("v1", true)), "[v1beta1:true]"},
		{"removed: gone from the CRD, not waited on", crd(v("v1beta1", false), v("v1", true)), crd(v("v1", true)), "[]"},
		{"a storage switch: serving unchanged", crd(v("v1beta1", true), v("v1", true)), crd(v("v1beta1", true), v("v1", true)), "[]"},
	} {
		var got []string
		for _, c := range servingChanges(tc.before, tc.after) {
			got = append(got, fmt.Sprintf("%s:%t", c.Name, c.Served))
		}
		if s := fmt.Sprint(got); s != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, s, tc.want)
		}
	}
}
