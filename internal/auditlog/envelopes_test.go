package auditlog

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

var v1beta1 = schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}

const exporter = "system:serviceaccount:monitoring:exporter"

// Each envelope a managed cluster exports the audit log in, as a user would
// paste it: the same request, read as the same client.
func TestEnvelopes(t *testing.T) {
	ev := line("ResponseComplete", "list", exporter, "exporter/v1.2", "example.com", "v1beta1", "widgets", t0)
	want := results.AuditClient{User: exporter, ServiceAccount: "monitoring/exporter", UserAgent: "exporter/v1.2",
		Verbs: []string{"list"}, Requests: 1, First: t0, Last: t0}
	gke := `{"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","serviceName":"k8s.io",` +
		`"methodName":"io.k8s.example.com.v1beta1.widgets.list","resourceName":"apis/example.com/v1beta1/namespaces/default/widgets",` +
		`"authenticationInfo":{"principalEmail":"` + exporter + `"},"requestMetadata":{"callerIp":"10.0.0.12","callerSuppliedUserAgent":"exporter/v1.2"}},` +
		`"insertId":"x","resource":{"type":"k8s_cluster"},"timestamp":"2026-11-28T10:00:00Z","severity":"INFO",` +
		`"logName":"projects/p/logs/cloudaudit.googleapis.com%2Fdata_access"}`
	for _, tc := range []struct {
		name, text, envelope string
	}{
		{"the log backend's line", ev + "\n", "audit"},
		{"an EventList (the webhook backend's)", `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + strings.Replace(ev, `"kind":"Event",`, ``, 1) + `]}` + "\n", "audit"},
		{"pretty-printed (jq .)", strings.ReplaceAll(strings.Replace(ev, "{", "{\n  ", 1), `,"`, ",\n  \""), "audit"},
		{"EKS: a CloudWatch log event a line", `{"timestamp":1795860000000,"message":` + quote(ev) + `,"logStreamName":"kube-apiserver-audit-0a1b"}` + "\n", "eks"},
		{"EKS: a Logs Insights export", `[{"@timestamp":"2026-11-28 10:00:00.000","@message":` + quote(ev) + `}]`, "eks"},
		{"EKS: aws logs filter-log-events, pretty-printed", "{\n    \"events\": [\n        {\n            \"logStreamName\": \"kube-apiserver-audit-0a1b\",\n            \"timestamp\": 1795860000000,\n            \"message\": " + quote(ev) + ",\n            \"eventId\": \"1\"\n        }\n    ],\n    \"searchedLogStreams\": []\n}\n", "eks"},
		{"EKS: CloudWatch's export to S3 (time first)", "2026-11-28T10:00:00.000Z " + ev + "\n", "audit"},
		{"AKS: a diagnostic export, one document", `{"records":[{"time":"2026-11-28T10:00:00Z","category":"kube-audit","operationName":"Microsoft.ContainerService/managedClusters/diagnosticLogs/Read","properties":{"log":` + quote(ev+"\n") + `,"stream":"stdout","pod":"kube-apiserver-x"}}]}`, "aks"},
		{"AKS: JSON lines of records documents", `{"records":[{"category":"kube-audit","properties":{"log":` + quote(ev) + `}}]}` + "\n", "aks"},
		{"AKS: a storage account's record a line", `{"category":"kube-audit","properties":{"log":` + quote(ev) + `}}` + "\n", "aks"},
		{"GKE: a LogEntry a line", gke + "\n", "gke"},
		{"GKE: gcloud logging read --format=json", "[\n  " + gke + "\n]\n", "gke"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Read(t.Context(), []string{"-"}, Options{Stdin: strings.NewReader(tc.text), Resources: []schema.GroupResource{v1beta1.GroupResource()}})
			if err != nil {
				t.Fatal(err)
			}
			clients, own := res.Clients(v1beta1)
			if len(clients) != 1 || len(own) != 0 {
				t.Fatalf("clients = %+v, own = %+v; read %+v", clients, own, res.Read)
			}
			if !reflect.DeepEqual(clients[0], want) {
				t.Errorf("client = %+v\nwant     %+v", clients[0], want)
			}
			if res.Read.Envelopes[tc.envelope] != 1 || res.Read.Events != 1 || res.Read.Bad != 0 || res.Read.Truncated != 0 {
				t.Errorf("read = %+v", res.Read)
			}
			if !res.Read.From.Equal(t0) || !res.Read.To.Equal(t0) {
				t.Errorf("window %v to %v, want %v", res.Read.From, res.Read.To, t0)
			}
		})
	}
}

// What is counted: the last stage only, the resources asked about, clients
// told apart by user and agent, the plugin's own apart.
func TestCounting(t *testing.T) {
	kubectl := "kubectl/v1.37.2 (linux/amd64) kubernetes/abcdef"
	text := strings.Join([]string{
		line("RequestReceived", "get", "jane", kubectl, "example.com", "v1beta1", "widgets", t0),
		line("ResponseComplete", "get", "jane", kubectl, "example.com", "v1beta1", "widgets", t0.Add(time.Second)),
		line("ResponseStarted", "watch", exporter, "exporter/v1.2", "example.com", "v1beta1", "widgets", t0.Add(2*time.Second)),
		line("ResponseComplete", "watch", exporter, "exporter/v1.2", "example.com", "v1beta1", "widgets", t0.Add(3*time.Second)),
		line("Panic", "update", exporter, "exporter/v1.2", "example.com", "v1beta1", "widgets", t0.Add(4*time.Second)),
		line("ResponseComplete", "get", "jane", kubectl, "example.com", "v1beta1", "widgets", t0.Add(5*time.Second)),
		line("ResponseComplete", "patch", "jane", "kubectl-crdversion/v0.4.0", "example.com", "v1beta1", "widgets", t0.Add(6*time.Second)),
		line("ResponseComplete", "get", "jane", kubectl, "example.com", "v1", "widgets", t0.Add(7*time.Second)),
		line("ResponseComplete", "get", "jane", kubectl, "example.com", "v1beta1", "gadgets", t0.Add(8*time.Second)),
		line("ResponseComplete", "get", "jane", kubectl, "", "v1", "pods", t0.Add(9*time.Second)),
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"get","user":{"username":"jane"},"userAgent":"x","objectRef":{"resource":"widgets","subresource":"status","apiGroup":"example.com","apiVersion":"example.com/v1beta1"},"stageTimestamp":"2026-11-28T09:00:00Z"}`,
	}, "\n") + "\n"
	res, err := Read(t.Context(), []string{"-"}, Options{Stdin: strings.NewReader(text), Resources: []schema.GroupResource{v1beta1.GroupResource()}})
	if err != nil {
		t.Fatal(err)
	}
	clients, own := res.Clients(v1beta1)
	got := map[string]string{}
	for _, c := range clients {
		got[c.Who()+" "+c.UserAgent] = strings.Join(c.Verbs, ",") + " " + string(rune('0'+c.Requests))
	}
	want := map[string]string{
		"monitoring/exporter (ServiceAccount) exporter/v1.2": "update,watch 2",
		"jane " + kubectl: "get 2",
		"jane x":          "get/status 1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("clients = %v\nwant %v", got, want)
	}
	if clients[0].Requests != 2 || !clients[1].Last.Equal(t0.Add(5*time.Second)) && !clients[0].Last.Equal(t0.Add(5*time.Second)) {
		t.Errorf("order or times: %+v", clients)
	}
	if len(own) != 1 || !own[0].Own || own[0].Verbs[0] != "patch" {
		t.Errorf("own = %+v", own)
	}
	if v1, _ := res.Clients(v1beta1.GroupResource().WithVersion("v1")); len(v1) != 1 {
		t.Errorf("v1 clients = %+v", v1)
	}
	if res.Read.Events != 11 || res.Read.Requests != 7 {
		t.Errorf("events %d requests %d, want 11 and 7", res.Read.Events, res.Read.Requests)
	}
	if want := t0.Add(-time.Hour); !res.Read.From.Equal(want) || !res.Read.To.Equal(t0.Add(9*time.Second)) {
		t.Errorf("window %v to %v", res.Read.From, res.Read.To)
	}
}

func TestServiceAccountOf(t *testing.T) {
	for user, want := range map[string]string{
		exporter:                                "monitoring/exporter",
		"system:serviceaccount:ns":              "",
		"system:serviceaccount::name":           "",
		"system:serviceaccount:ns:a:b":          "",
		"jane@example.com":                      "",
		"system:serviceaccounts:monitoring:foo": "",
	} {
		if got := results.ServiceAccountOf(user); got != want {
			t.Errorf("ServiceAccountOf(%q) = %q, want %q", user, got, want)
		}
	}
}
