package usage

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// What kube-apiserver serves, trimmed: the families around ours stay so the
// filter is exercised.
const metricsPage = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="example.com",resource="widgets",scope="cluster",subresource="",verb="LIST",version="v1beta1"} 7
# HELP apiserver_requested_deprecated_apis [STABLE] Gauge of deprecated APIs that have been requested, broken out by API group, version, resource, subresource, and removed_release.
# TYPE apiserver_requested_deprecated_apis gauge
apiserver_requested_deprecated_apis{group="example.com",removed_release="",resource="widgets",subresource="",version="v1beta1"} 1
apiserver_requested_deprecated_apis{version="v1beta1",subresource="status",resource="widgets",group="example.com",removed_release=""} 1
apiserver_requested_deprecated_apis{group="example.com",removed_release="",resource="gadgets",subresource="",version="v1alpha1"} 1
apiserver_requested_deprecated_apis{group="other.example.com",removed_release="",resource="widgets",subresource="",version="v1alpha1"} 1
apiserver_requested_deprecated_apis{group="policy",removed_release="1.25",resource="podsecuritypolicies",subresource="",version="v1beta1"} 1
# HELP apiserver_requested_deprecated_apis_total not ours, despite the prefix
# TYPE apiserver_requested_deprecated_apis_total counter
apiserver_requested_deprecated_apis_total{group="example.com",resource="widgets",version="v1"} 3
# HELP process_start_time_seconds [ALPHA] Start time of the process since unix epoch in seconds.
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.7000000005e+09
`

func widgets(group string, versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:    group,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: versions,
		},
	}
}

func TestParseDeprecatedAPIs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		page    string
		group   string
		want    map[string]VersionRequests
		started time.Time
	}{
		{
			name:    "resource and subresource, labels in any order",
			page:    metricsPage,
			group:   "example.com",
			want:    map[string]VersionRequests{"v1beta1": {Subresources: []string{"", "status"}}},
			started: time.Unix(1700000000, 5e8).UTC(),
		},
		{
			name:    "same resource in another group",
			page:    metricsPage,
			group:   "other.example.com",
			want:    map[string]VersionRequests{"v1alpha1": {Subresources: []string{""}}},
			started: time.Unix(1700000000, 5e8).UTC(),
		},
		{
			name:  "metric absent",
			page:  "# TYPE apiserver_request_total counter\napiserver_request_total{group=\"example.com\"} 1\n",
			group: "example.com",
			want:  map[string]VersionRequests{},
		},
		{
			name:  "removed_release kept; untyped sample (no TYPE line); no trailing newline",
			page:  `apiserver_requested_deprecated_apis{resource="widgets",group="example.com",version="v2beta1",subresource="",removed_release="1.40"} 1`,
			group: "example.com",
			want:  map[string]VersionRequests{"v2beta1": {Subresources: []string{""}, RemovedRelease: "1.40"}},
		},
		{
			name:  "a zero sample is no request",
			page:  `apiserver_requested_deprecated_apis{group="example.com",resource="widgets",version="v1beta1",subresource="",removed_release=""} 0` + "\n",
			group: "example.com",
			want:  map[string]VersionRequests{},
		},
		{
			name:  "a line the parser refuses in another family does not hide ours",
			page:  "some_other_metric{le=\"+Inf\" 1 garbage\n" + metricsPage,
			group: "example.com",
			want:  map[string]VersionRequests{"v1beta1": {Subresources: []string{"", "status"}}},
			// The start time is in metricsPage.
			started: time.Unix(1700000000, 5e8).UTC(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseDeprecatedAPIs(strings.NewReader(tc.page))
			if err != nil {
				t.Fatal(err)
			}
			if d.Access != MetricsRead {
				t.Errorf("access = %q", d.Access)
			}
			if got := d.ForCRD(widgets(tc.group)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ForCRD = %#v, want %#v", got, tc.want)
			}
			if !d.StartedAt.Equal(tc.started) {
				t.Errorf("StartedAt = %v, want %v", d.StartedAt, tc.started)
			}
		})
	}
}

func TestDeprecatedRequests(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		access  MetricsAccess
		wantErr bool
	}{
		{"read", http.StatusOK, metricsPage, MetricsRead, false},
		{"forbidden is an answer", http.StatusForbidden, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"forbidden: User \"jane\" cannot get path \"/metrics\"","reason":"Forbidden","code":403}`, MetricsNotAllowed, false},
		{"no /metrics is an answer", http.StatusNotFound, "404 page not found", MetricsNotServed, false},
		{"a server error fails", http.StatusInternalServerError, "boom", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/metrics" {
					t.Errorf("path = %q", r.URL.Path)
				}
				if !strings.HasPrefix(r.Header.Get("Accept"), "text/plain") {
					t.Errorf("Accept = %q", r.Header.Get("Accept"))
				}
				if tc.status != http.StatusOK {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			d, err := DeprecatedRequests(context.Background(), dc.RESTClient())
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error; got %+v", d)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Access != tc.access {
				t.Errorf("access = %q, want %q", d.Access, tc.access)
			}
			if tc.access == MetricsRead && len(d.Series) != 5 {
				t.Errorf("series = %+v", d.Series)
			}
		})
	}
}
