package verify

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// crdWith is a CRD whose storage version is v1 and whose old versions are
// as given; v1beta1's schema allows spec.legacy, v1's does not, unless
// same.
func crdWith(conversion apiextensionsv1.ConversionStrategyType, same bool, old ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	schema := func(fields ...string) *apiextensionsv1.CustomResourceValidation {
		spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
		for _, f := range fields {
			spec.Properties[f] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		}
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}}}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: conversion}
	newFields := []string{"host"}
	if same {
		newFields = append(newFields, "legacy")
	}
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, Schema: schema(newFields...)}}
	for _, v := range old {
		v.Schema = schema("host", "legacy")
		crd.Spec.Versions = append(crd.Spec.Versions, v)
	}
	crd.Status.StoredVersions = []string{"v1beta1", "v1"}
	return crd
}

func TestProofByCRD(t *testing.T) {
	served := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1beta1", Served: true}
	unserved := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1beta1"}
	for _, tc := range []struct {
		name       string
		crd        *apiextensionsv1.CustomResourceDefinition
		acceptLoss bool
		want       results.ProofKind
		known      bool
	}{
		{"None, the new schema keeps every field", crdWith(apiextensionsv1.NoneConverter, true, served), false, results.ProofSchema, true},
		{"None, a field only the old schema has: each object checked", crdWith(apiextensionsv1.NoneConverter, false, served), false, "", false},
		{"Webhook: each object checked", crdWith(apiextensionsv1.WebhookConverter, true, served), false, "", false},
		{"losses accepted", crdWith(apiextensionsv1.WebhookConverter, true, served), true, results.ProofWaived, true},
		{"not served: what the served versions show is kept", crdWith(apiextensionsv1.WebhookConverter, true, unserved), false, results.ProofUnserved, true},
		{"not served, a field only the old schema has", crdWith(apiextensionsv1.NoneConverter, false, unserved), false, results.ProofUnserved, true},
		{"missing from spec.versions", crdWith(apiextensionsv1.NoneConverter, false), false, results.ProofUnreadable, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, known := ProofByCRD(tc.crd, "v1beta1", tc.acceptLoss)
			if known != tc.known || (known && p.By != tc.want) || p.Version != "v1beta1" || p.Storage != "v1" {
				t.Errorf("proof %+v, known %v: want %q, known %v", p, known, tc.want, tc.known)
			}
			if known && (p.Detail == "" || !p.Holds()) {
				t.Errorf("a proof the CRD gives must hold and say why: %+v", p)
			}
		})
	}
}
