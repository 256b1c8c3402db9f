package usagereport

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
)

func usageCRD(versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:    "example.com",
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets"},
			Versions: versions,
		},
	}
}

var (
	v1       = apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true}
	v1beta1  = apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1beta1", Served: true, Deprecated: true}
	v1alpha1 = apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1alpha1"}
)

// midDeprecation: v1beta1 is deprecated and still read and written.
func midDeprecation() *usage.Result {
	return &usage.Result{
		Metrics: &usage.DeprecatedAPIs{Access: usage.MetricsRead, StartedAt: time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)},
		CRDs: []usage.CRDUsage{{
			CRD:      usageCRD(v1alpha1, v1, v1beta1),
			Requests: map[string]usage.VersionRequests{"v1beta1": {Subresources: []string{"", "status"}}},
			Managers: &usage.ManagerCount{ListedAt: "v1", Objects: 15, Managers: []usage.ManagerUse{
				{Manager: "helm", Operation: "Apply", Version: "v1", Objects: 3},
				{Manager: "kubectl-client-side-apply", Operation: "Update", Version: "v1beta1", Objects: 12},
				{Manager: "helm", Operation: "Apply", Version: "v1beta1", Objects: 3},
			}},
		}},
	}
}

func TestWriteUsageTable(t *testing.T) {
	var buf bytes.Buffer
	r := From(midDeprecation())
	if err := render.WriteUsage(&buf, render.FormatTable, r); err != nil {
		t.Fatal(err)
	}
	want := `widgets.example.com (15 objects, listed at v1)
VERSION    SERVED   DEPRECATED   STORAGE   REQUESTED                       MANAGERS
v1         yes      no           yes       unknown (not deprecated)        helm (Apply) on 3 objects
v1beta1    yes      yes          no        yes (widgets, widgets/status)   kubectl-client-side-apply (Update) on 12 objects, helm (Apply) on 3
v1alpha1   no       no           no        unknown (not served)            none
attention: v1beta1 is deprecated and still used: requested since the API server started; last written by 2 field managers
`
	got := buf.String()
	if !strings.HasPrefix(got, want) {
		t.Errorf("table:\n%s\nwant it to start with:\n%s", got, want)
	}
	if r.Attention != 1 {
		t.Errorf("attention = %d, want 1", r.Attention)
	}
	for _, s := range []string{"since it started at 2025-05-01T10:00:00Z.", "on the API server that answered only", "only reads never shows", "No use shown does not prove"} {
		if !strings.Contains(got, s) {
			t.Errorf("closing lacks %q:\n%s", s, got)
		}
	}
	if strings.Contains(got, "metrics:") {
		t.Errorf("metrics were read, yet:\n%s", got)
	}
}

func TestUsageAttention(t *testing.T) {
	for _, tc := range []struct {
		name      string
		result    func() *usage.Result
		attention int
		requested map[string]render.Requested
		sentence  string
	}{
		{
			name:      "deprecated and used",
			result:    midDeprecation,
			attention: 1,
			requested: map[string]render.Requested{"v1": render.RequestedUnknown, "v1beta1": render.RequestedYes, "v1alpha1": render.RequestedUnknown},
		},
		{
			name: "deprecated, not requested, no manager: nothing to look at",
			result: func() *usage.Result {
				r := midDeprecation()
				r.CRDs[0].Requests = nil
				r.CRDs[0].Managers.Managers = r.CRDs[0].Managers.Managers[:1]
				return r
			},
			requested: map[string]render.Requested{"v1beta1": render.RequestedNo},
		},
		{
			name: "metrics not allowed: managers alone still count",
			result: func() *usage.Result {
				r := midDeprecation()
				r.Metrics = &usage.DeprecatedAPIs{Access: usage.MetricsNotAllowed}
				r.CRDs[0].Requests = nil
				return r
			},
			attention: 1,
			requested: map[string]render.Requested{"v1beta1": render.RequestedUnknown},
			sentence:  "metrics: not allowed to read /metrics (needs get on nonResourceURL /metrics); usage by request cannot be shown.",
		},
		{
			name: "not served, last written by a client",
			result: func() *usage.Result {
				r := midDeprecation()
				r.CRDs[0].Requests = nil
				r.CRDs[0].Managers.Managers = []usage.ManagerUse{{Manager: "old-operator", Operation: "Update", Version: "v1alpha1", Objects: 1}}
				return r
			},
			attention: 1,
			requested: map[string]render.Requested{"v1alpha1": render.RequestedUnknown},
		},
		{
			name: "requested only by this plugin's own verify: no attention",
			result: func() *usage.Result {
				r := midDeprecation()
				r.CRDs[0].Managers.Managers = r.CRDs[0].Managers.Managers[:1]
				r.CRDs[0].Own = map[string]usage.OwnUse{"v1beta1": {Commands: []string{"verify"}, Requests: 12, Last: time.Date(2025, 5, 2, 9, 0, 0, 0, time.UTC)}}
				return r
			},
			requested: map[string]render.Requested{"v1beta1": render.RequestedYes},
			sentence:  "yes (widgets, widgets/status): only this plugin's own verify",
		},
		{
			name: "requested by a client since this plugin's own",
			result: func() *usage.Result {
				r := midDeprecation()
				r.CRDs[0].Managers.Managers = r.CRDs[0].Managers.Managers[:1]
				r.CRDs[0].Own = map[string]usage.OwnUse{"v1beta1": {Commands: []string{"verify", "migrate"}, Requests: 12, Since: 1}}
				return r
			},
			attention: 1,
			requested: map[string]render.Requested{"v1beta1": render.RequestedYes},
			sentence:  "attention: v1beta1 is deprecated and still used: requested by another client than this plugin (1 request since its own verify, migrate)",
		},
		{
			name: "storage version used and requested: no attention",
			result: func() *usage.Result {
				r := midDeprecation()
				r.CRDs[0].CRD = usageCRD(v1)
				r.CRDs[0].Requests = map[string]usage.VersionRequests{"v1": {Subresources: []string{""}}}
				return r
			},
			requested: map[string]render.Requested{"v1": render.RequestedYes},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := From(tc.result())
			if r.Attention != tc.attention {
				t.Errorf("attention = %d, want %d", r.Attention, tc.attention)
			}
			for _, v := range r.Items[0].Versions {
				if want, ok := tc.requested[v.Name]; ok && v.Requested != want {
					t.Errorf("%s requested = %q (%s), want %q", v.Name, v.Requested, v.RequestedReason, want)
				}
			}
			var buf bytes.Buffer
			if err := render.WriteUsage(&buf, render.FormatTable, r); err != nil {
				t.Fatal(err)
			}
			if tc.sentence != "" && !strings.Contains(buf.String(), tc.sentence) {
				t.Errorf("output lacks %q:\n%s", tc.sentence, buf.String())
			}
		})
	}
}

func TestWriteUsageDocument(t *testing.T) {
	var buf bytes.Buffer
	if err := render.WriteUsage(&buf, render.FormatJSON, From(midDeprecation())); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metrics    map[string]any `json:"metrics"`
		Attention  int            `json:"attention"`
		Items      []struct {
			Name     string           `json:"name"`
			ListedAt string           `json:"listedAt"`
			Objects  int64            `json:"objects"`
			Versions []map[string]any `json:"versions"`
		} `json:"items"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.String())
	}
	if doc.APIVersion != render.APIVersion || doc.Kind != "UsageReport" || doc.Attention != 1 || doc.Metrics["access"] != "read" || doc.Metrics["startedAt"] != "2025-05-01T10:00:00Z" {
		t.Errorf("document head = %+v", doc)
	}
	it := doc.Items[0]
	if it.Name != "widgets.example.com" || it.ListedAt != "v1" || it.Objects != 15 || len(it.Versions) != 3 {
		t.Fatalf("item = %+v", it)
	}
	beta := it.Versions[1]
	for key, want := range map[string]any{"name": "v1beta1", "served": true, "deprecated": true, "storage": false, "requested": "yes", "attention": true} {
		if beta[key] != want {
			t.Errorf("v1beta1 %s = %v, want %v", key, beta[key], want)
		}
	}
	if got := beta["requestedResources"].([]any); len(got) != 2 || got[1] != "widgets/status" {
		t.Errorf("requestedResources = %v", got)
	}
	if got := beta["managers"].([]any)[0].(map[string]any); got["manager"] != "kubectl-client-side-apply" || got["operation"] != "Update" || got["objects"] != 12.0 {
		t.Errorf("managers[0] = %v", got)
	}
	if got := it.Versions[2]["managers"]; got == nil {
		t.Error("a version without managers has managers: null, want []")
	}

	buf.Reset()
	if err := render.WriteUsage(&buf, render.FormatName, From(midDeprecation())); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "customresourcedefinition.apiextensions.k8s.io/widgets.example.com\n" {
		t.Errorf("-o name = %q", got)
	}
}
