package cluster

import (
	"errors"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestNotServedYet(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "")
	established := func(s apiextensionsv1.ConditionStatus) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{Status: apiextensionsv1.CustomResourceDefinitionStatus{
			Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: s}}}}
	}
	for _, tc := range []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		err  error
		want bool
	}{
		{"just created, no condition yet", &apiextensionsv1.CustomResourceDefinition{}, notFound, true},
		{"not yet established", established(apiextensionsv1.ConditionFalse), notFound, true},
		{"established: a 404 is an answer to report", established(apiextensionsv1.ConditionTrue), notFound, false},
		{"not established, another error", established(apiextensionsv1.ConditionFalse), errors.New("connection refused"), false},
		{"no error", &apiextensionsv1.CustomResourceDefinition{}, nil, false},
	} {
		if got := NotServedYet(tc.crd, tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
