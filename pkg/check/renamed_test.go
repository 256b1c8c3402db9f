package check

import (
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// widgetsIn is the Widget CRD under group, applied by the Helm release
// named (none when "").
func widgetsIn(group, release string) *apiextensionsv1.CustomResourceDefinition {
	var annotations map[string]string
	if release != "" {
		annotations = map[string]string{"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": "apps"}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group, Annotations: annotations},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}}},
	}
}

// Of the live CRDs the new manifests lack, only those of a new CRD's kind
// and plural under another group are reported (a rename), with how many
// objects they hold: an error where the same source applied it, a warning
// where nothing tells; one another source applied is not reported, nor an
// API of that kind that is no CRD.
func TestRenamedFrom(t *testing.T) {
	objects := func(group string, n int) []runtime.Object {
		var out []runtime.Object
		for i := range n {
			out = append(out, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: group + "/v1", Kind: "Widget"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("w%d", i)}})
		}
		return out
	}
	resources := func(groups ...string) []*metav1.APIResourceList {
		var out []*metav1.APIResourceList
		for _, g := range groups {
			out = append(out, &metav1.APIResourceList{GroupVersion: g + "/v1", APIResources: []metav1.APIResource{
				{Name: "widgets", Kind: "Widget", Namespaced: true}, {Name: "widgets/status", Kind: "Widget", Namespaced: true}}})
		}
		return out
	}
	type crds = []*apiextensionsv1.CustomResourceDefinition
	gadgets := func(release string) *apiextensionsv1.CustomResourceDefinition {
		g := widgetsIn("example.org", release)
		g.Name, g.Spec.Names = "gadgets.example.org", apiextensionsv1.CustomResourceDefinitionNames{Kind: "Gadget", Plural: "gadgets"}
		return g
	}
	for _, tc := range []struct {
		name    string
		live    []*apiextensionsv1.CustomResourceDefinition
		served  []string // groups discovery shows widgets in
		objects []runtime.Object
		next    []*apiextensionsv1.CustomResourceDefinition
		sibling *apiextensionsv1.CustomResourceDefinition // a live CRD of the new manifests, of another kind
		want    []string
	}{
		{name: "renamed: the live CRD under the old group, of the same Helm release, holds objects",
			live: crds{widgetsIn("example.com", "web")}, served: []string{"example.com"}, objects: objects("example.com", 3),
			next: crds{widgetsIn("example.org", "")}, sibling: gadgets("web"),
			want: []string{"error crdRenamed widgets.example.com: is on the cluster with 3 objects"}},
		{name: "renamed, both live already, the new one from the same release",
			live: crds{widgetsIn("example.com", "web"), widgetsIn("example.org", "web")}, served: []string{"example.com", "example.org"}, objects: objects("example.com", 1),
			next: crds{widgetsIn("example.org", "")},
			want: []string{"error crdRenamed widgets.example.com: is on the cluster with 1 object"}},
		{name: "renamed, no object left: nothing is lost",
			live: crds{widgetsIn("example.com", "web")}, served: []string{"example.com"},
			next: crds{widgetsIn("example.org", "")}, sibling: gadgets("web"),
			want: []string{"warning crdRenamed widgets.example.com: is on the cluster with no object"}},
		{name: "nothing tells whether the same source applied it: a warning",
			live: crds{widgetsIn("example.com", "")}, served: []string{"example.com"}, objects: objects("example.com", 3),
			next: crds{widgetsIn("example.org", "")},
			want: []string{"warning crdRenamed widgets.example.com: is on the cluster with 3 objects"}},
		{name: "another release applied it: an unrelated CRD of the same kind",
			live: crds{widgetsIn("example.com", "other")}, served: []string{"example.com"}, objects: objects("example.com", 3),
			next: crds{widgetsIn("example.org", "")}, sibling: gadgets("web"),
			want: []string{}},
		{name: "both kept in the new manifests",
			live: crds{widgetsIn("example.com", "web")}, served: []string{"example.com"}, objects: objects("example.com", 3),
			next: crds{widgetsIn("example.org", ""), widgetsIn("example.com", "")},
			want: []string{}},
		{name: "the same CRD live", live: crds{widgetsIn("example.org", "web")}, served: []string{"example.org"},
			next: crds{widgetsIn("example.org", "")}, want: []string{}},
		{name: "an API of the same kind that is no CRD (aggregated)", served: []string{"widgets.aggregated.io"},
			next: crds{widgetsIn("example.org", "")}, want: []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stored []runtime.Object
			for _, l := range tc.live {
				stored = append(stored, l)
			}
			ext := apiextensionsfake.NewClientset(stored...)
			disc := ext.Discovery().(*fakediscovery.FakeDiscovery)
			disc.Resources = resources(tc.served...)
			scheme := metadatafake.NewTestScheme()
			if err := metav1.AddMetaToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			c := cluster.Clients{CRDs: ext, Discovery: disc, Metadata: metadatafake.NewSimpleMetadataClient(scheme, tc.objects...)}
			got := []string{}
			groups := func() (servedGroups, error) { return discoverGroups(c.Discovery) }
			// The references: the new manifests and the live CRDs of their names.
			refs := append(crds{}, tc.next...)
			if tc.sibling != nil {
				refs = append(refs, tc.sibling)
			}
			for _, l := range tc.live {
				if inManifests(l.Name, tc.next) {
					refs = append(refs, l)
				}
			}
			for _, n := range tc.next {
				fs, err := renamedFrom(t.Context(), c, n, tc.next, refs, groups)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range fs {
					if f.Kind != lifecycle.FindingDropped {
						t.Errorf("kind %s", f.Kind)
					}
					_, where, _ := strings.Cut(f.Message, f.CRD+" ")
					where, _, _ = strings.Cut(where, " and not")
					got = append(got, fmt.Sprintf("%s %s %s: %s", f.Severity, f.Rule, f.CRD, where))
				}
			}
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
