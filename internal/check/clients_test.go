package check

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/usage"
)

// The deprecated-API metric as kube-apiserver serves it: v1beta1 of widgets
// requested, the resource and its status.
const requestedPage = `# TYPE apiserver_requested_deprecated_apis gauge
apiserver_requested_deprecated_apis{group="example.com",removed_release="",resource="widgets",subresource="",version="v1beta1"} 1
apiserver_requested_deprecated_apis{group="example.com",removed_release="",resource="widgets",subresource="status",version="v1beta1"} 1
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.7000000005e+09
`

func TestRequestsFinding(t *testing.T) {
	read, err := usage.ParseDeprecatedAPIs(strings.NewReader(requestedPage))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1beta1", Served: true, Deprecated: true},
				{Name: "v1alpha1", Served: true},
				{Name: "v1alpha2", Served: true, Deprecated: true},
				{Name: "v1", Served: true, Storage: true}},
		},
	}
	for _, tc := range []struct {
		name    string
		metrics *usage.DeprecatedAPIs
		version string
		want    string // the rule; "" for no finding
		message []string
		own     map[string]usage.OwnUse
	}{
		{"requested while deprecated", read, "v1beta1", "requestedOnVersion", []string{"requests to v1beta1 (the resource, status) since", "(2023-11-14T22:13:20Z)", "get 404"}, nil},
		{"deprecated, never requested", read, "v1alpha2", "", nil, nil},
		{"requested by this plugin only", read, "v1beta1", "requestedOnlyByThisPlugin", []string{"every one was this plugin's own (verify, 12 requests"}, map[string]usage.OwnUse{"v1beta1": {Commands: []string{"verify"}, Requests: 12}}},
		{"requested by a client since this plugin", read, "v1beta1", "requestedOnVersion", []string{"get 404 (2 since this plugin's own verify)"}, map[string]usage.OwnUse{"v1beta1": {Commands: []string{"verify"}, Requests: 12, Since: 2}}},
		{"never deprecated: the metric counts nothing", read, "v1alpha1", "", nil, nil},
		{"not allowed to read", &usage.DeprecatedAPIs{Access: usage.MetricsNotAllowed}, "v1beta1", "requestsNotVisible", []string{"needs get on nonResourceURL /metrics", "only reads v1beta1 is not named"}, nil},
		{"not served", &usage.DeprecatedAPIs{Access: usage.MetricsNotServed}, "v1alpha2", "requestsNotVisible", []string{"serves no /metrics"}, nil},
		{"not allowed, never deprecated", &usage.DeprecatedAPIs{Access: usage.MetricsNotAllowed}, "v1alpha1", "", nil, nil},
	} {
		f, ok := requestsFinding(tc.metrics, crd, tc.version, "v1", tc.own)
		if ok != (tc.want != "") || f.Rule != tc.want {
			t.Errorf("%s: got %v %+v, want rule %q", tc.name, ok, f, tc.want)
			continue
		}
		for _, m := range tc.message {
			if !strings.Contains(f.Message, m) {
				t.Errorf("%s: message %q lacks %q", tc.name, f.Message, m)
			}
		}
	}
}
