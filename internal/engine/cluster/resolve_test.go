package cluster

import (
	"errors"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A name resolves as kubectl resolves a resource: the CRD's name, its
// plural, singular, short name or kind, each optionally qualified by its
// group or by one of its versions and its group.
func TestResolve(t *testing.T) {
	crds := []apiextensionsv1.CustomResourceDefinition{{
		ObjectMeta: metav1.ObjectMeta{Name: "certificates.pki.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "pki.example.com",
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "certificates", Singular: "certificate", Kind: "Certificate", ShortNames: []string{"cert"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1"}, {Name: "v1beta1"}}},
	}}
	noDiscovery := func() (meta.RESTMapper, error) { return nil, errors.New("no discovery") }
	for arg, found := range map[string]bool{
		"certificates.pki.example.com":         true,
		"certificates":                         true,
		"certificate":                          true,
		"cert":                                 true,
		"Certificate":                          true,
		"certificate.pki.example.com":          true,
		"certificate.v1.pki.example.com":       true,
		"certificates.v1beta1.pki.example.com": true,
		"certificate.v2.pki.example.com":       false,
		"certificate.v1.other.example.com":     false,
		"certificate.other.example.com":        false,
	} {
		crd, err := Resolve(crds, arg, noDiscovery)
		if found != (err == nil && crd != nil) {
			t.Errorf("Resolve(%q) = %v, %v; want found %v", arg, crd, err, found)
		}
	}
}
