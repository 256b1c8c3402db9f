package check_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/check"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// A release that switches storage to v1 and stops serving v1beta1 at once,
// conversion None: v1beta1 {name, snapshot} stores the objects, v1 {name}.
// Read at v1, no object shows spec.snapshot; read at v1beta1, the four
// that hold it do, and the first write at v1 drops it. check names exactly
// those four, as migrate (which leaves them) does.
func TestCheckNamesWhatObjectsStoredAtAnOldVersionLose(t *testing.T) {
	fx, c := startSandbox(t)
	withSnapshot := gadgetSchema(func(spec *apiextensionsv1.JSONSchemaProps) {
		spec.Properties["snapshot"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	})
	live := fixtures.CRD("example.com", "Gadget", "gadgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1beta1", Served: true, Storage: true}, fixtures.Version{Name: "v1", Served: true})
	live.Spec.Versions[0].Schema, live.Spec.Versions[1].Schema = withSnapshot, gadgetSchema(nil)
	if _, err := fx.CreateCRD(t.Context(), live); err != nil {
		t.Fatal(err)
	}
	var objs []fixtures.Object
	var want []string
	for i := range 10 {
		spec := map[string]any{"name": fmt.Sprint(i)}
		if i%3 == 0 {
			spec["snapshot"] = "fake-snapshot"
			want = append(want, fmt.Sprintf("ns/g-%d", i))
		}
		objs = append(objs, fixtures.Object{Namespace: "ns", Name: fmt.Sprintf("g-%d", i), Spec: spec})
	}
	if err := fx.CreateObjects(t.Context(), schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "gadgets"}, "Gadget", objs); err != nil {
		t.Fatal(err)
	}
	next := live.DeepCopy()
	next.Spec.Versions[0].Served, next.Spec.Versions[0].Storage, next.Spec.Versions[1].Storage = false, false, true

	found, err := check.AgainstCluster(t.Context(), c.Clients, []*apiextensionsv1.CustomResourceDefinition{next}, check.Options{Objects: true, PageSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		if f.Rule == "objectLosesFields" {
			if f.Severity != lifecycle.SeverityError || f.Version != "v1" || f.Path != "spec.snapshot" {
				t.Errorf("finding %+v: want an error at v1 naming spec.snapshot", f)
			}
			got = append(got, f.Objects...)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("objects losing spec.snapshot: %q, want %q", got, want)
	}

	// The control: v1 keeps spec.snapshot. Nothing is lost, nothing said.
	next.Spec.Versions[1].Schema = withSnapshot
	found, err = check.AgainstCluster(t.Context(), c.Clients, []*apiextensionsv1.CustomResourceDefinition{next}, check.Options{Objects: true, PageSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if f.Rule == "objectLosesFields" {
			t.Errorf("with v1 keeping spec.snapshot: %+v", f)
		}
	}
}
