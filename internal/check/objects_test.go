package check

import (
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

func TestGroupObjects(t *testing.T) {
	missing := func(name string) results.Finding {
		return results.Finding{Severity: lifecycle.SeverityError, Kind: results.FindingObjects, CRD: "gadgets.example.com", Version: "v1",
			Rule: "objectRefused", Path: "spec.owner", Object: name, Message: "spec.owner: Required value"}
	}
	var found []results.Finding
	for i := range 500 {
		found = append(found, missing(fmt.Sprintf("ns/g-%03d", i)))
	}
	odd := missing("ns/odd")
	odd.Message, odd.Path = "spec.size: Unsupported value", "spec.size"
	found = append(found, odd)

	got := groupObjects(found)
	if len(got) != 2 {
		t.Fatalf("%d findings, want one per message: %+v", len(got), got)
	}
	if g := got[0]; g.Count != 500 || len(g.Objects) != 500 || g.Object != "ns/g-000, ns/g-001, ns/g-002, and 497 more" {
		t.Errorf("the group: count %d, %d names, %q", g.Count, len(g.Objects), g.Object)
	}
	if g := got[1]; g.Count != 1 || g.Object != "ns/odd" || g.Objects[0] != "ns/odd" {
		t.Errorf("the single one: %+v", g)
	}
}

func TestReadVersion(t *testing.T) {
	schema := func(field string) *apiextensionsv1.CustomResourceValidation {
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{field: {Type: "string"}}}}
	}
	crd := func(webhook bool, versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: versions}}
		if webhook {
			c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
		}
		return c
	}
	v1 := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true, Schema: schema("a")}
	sameOld := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1beta1", Served: true, Deprecated: true, Schema: schema("a")}
	otherOld := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1beta1", Served: true, Deprecated: true, Schema: schema("legacy")}
	for _, tc := range []struct {
		name string
		live *apiextensionsv1.CustomResourceDefinition
		v    string
		want string
	}{
		{"deprecated with the same schema: read where the metric does not count", crd(false, v1, sameOld), "v1beta1", "v1"},
		// Read at v1, the API server would prune legacy: the new rules on
		// it would go unseen.
		{"deprecated with another schema: read at it", crd(false, v1, otherOld), "v1beta1", "v1beta1"},
		{"served, not deprecated", crd(false, v1, otherOld), "v1", "v1"},
		{"new to the cluster, conversion None", crd(false, v1), "v2", "v1"},
		{"new to the cluster, webhook: cannot be seen", crd(true, v1), "v2", ""},
		{"deprecated, webhook: read at it", crd(true, v1, sameOld), "v1beta1", "v1beta1"},
		// The new release brings the converter: until it runs, the form
		// it gives is unknown, but where no conversion is needed.
		{"None to a webhook, a version new to the cluster", crd(false, v1), "v2", ""},
		{"None to a webhook, a version served but stored elsewhere", withStored(crd(false, v1, otherOld), "v1"), "v1beta1", ""},
		{"None to a webhook, every object stored at it", withStored(crd(false, v1, otherOld), "v1"), "v1", "v1"},
		{"None to a webhook, objects maybe stored at another", withStored(crd(false, v1, otherOld), "v1beta1", "v1"), "v1", ""},
	} {
		next := tc.live
		if strings.HasPrefix(tc.name, "None to a webhook") {
			next = crd(true, v1)
		}
		if got := readVersion(tc.live, next, tc.v); got != tc.want {
			t.Errorf("%s: readVersion = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func withStored(crd *apiextensionsv1.CustomResourceDefinition, stored ...string) *apiextensionsv1.CustomResourceDefinition {
	crd.Status.StoredVersions = stored
	return crd
}
