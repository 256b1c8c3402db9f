package usagereport

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/auditlog"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
)

const auditLines = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"list","user":{"username":"system:serviceaccount:monitoring:exporter"},"userAgent":"exporter/v1.2","objectRef":{"resource":"widgets","apiGroup":"example.com","apiVersion":"v1beta1"},"stageTimestamp":"2026-11-28T10:00:00.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"get","user":{"username":"system:serviceaccount:monitoring:exporter"},"userAgent":"exporter/v1.2","objectRef":{"resource":"widgets","apiGroup":"example.com","apiVersion":"v1beta1"},"stageTimestamp":"2026-11-28T10:05:00.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"patch","user":{"username":"jane"},"userAgent":"kubectl-crdversion/v0.4.0","objectRef":{"resource":"widgets","apiGroup":"example.com","apiVersion":"v1beta1"},"stageTimestamp":"2026-11-28T10:06:00.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"update","user":{"username":"system:serviceaccount:widgets:operator"},"userAgent":"operator/v2","objectRef":{"resource":"widgets","apiGroup":"example.com","apiVersion":"v1"},"stageTimestamp":"2026-11-28T11:00:00.000000Z"}
`

// quiet: neither the metric nor managedFields show use of v1beta1.
func quiet() *usage.Result {
	r := midDeprecation()
	r.CRDs[0].Requests = nil
	r.CRDs[0].Managers.Managers = r.CRDs[0].Managers.Managers[:1]
	return r
}

func readLog(t *testing.T, text string) *auditlog.Result {
	t.Helper()
	log, err := auditlog.Read(t.Context(), []string{"-"}, auditlog.Options{Stdin: strings.NewReader(text),
		Resources: []schema.GroupResource{{Group: "example.com", Resource: "widgets"}}})
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// A client the audit log names asks attention for the deprecated version it
// requested, where the metric and managedFields show nothing; the plugin's
// own requests do not; a client of the storage version does not.
func TestFromAuditLog(t *testing.T) {
	if r := From(quiet()); r.Attention != 0 {
		t.Fatalf("without a log: attention %d", r.Attention)
	}
	r := FromAudit(quiet(), readLog(t, auditLines))
	if r.Attention != 1 {
		t.Errorf("attention = %d, want 1 (v1beta1's exporter)", r.Attention)
	}
	var buf bytes.Buffer
	if err := render.WriteUsage(&buf, render.FormatTable, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"attention: v1beta1 is deprecated and still used: requested by monitoring/exporter (ServiceAccount) in the audit log\n",
		"v1beta1: 1 client in the audit log\nUSER                                   USER AGENT      VERBS       REQUESTS   FIRST                  LAST\n" +
			"monitoring/exporter (ServiceAccount)   exporter/v1.2   get, list   2          2026-11-28T10:00:00Z   2026-11-28T10:05:00Z\n",
		"v1beta1: this plugin's own: 1 request as jane (patch), 2026-11-28T10:06:00Z to 2026-11-28T10:06:00Z: not a client's\n",
		"v1: 1 client in the audit log\n",
		"v1alpha1: no client in the audit log\n",
		"audit log: 1 file, 4 events from 2026-11-28T10:00:00Z to 2026-11-28T11:00:00Z; 4 completed requests to these CRDs counted.\n",
		"CLIENTS: the audit log's events",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	buf.Reset()
	if err := render.WriteUsage(&buf, render.FormatJSON, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		AuditLog struct {
			Files  []string `json:"files"`
			From   string   `json:"from"`
			To     string   `json:"to"`
			Events int      `json:"events"`
		} `json:"auditLog"`
		Items []struct {
			Versions []struct {
				Name       string           `json:"name"`
				Attention  bool             `json:"attention"`
				Clients    []map[string]any `json:"clients"`
				OwnClients []map[string]any `json:"ownClients"`
			} `json:"versions"`
		} `json:"items"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.AuditLog.From != "2026-11-28T10:00:00Z" || doc.AuditLog.To != "2026-11-28T11:00:00Z" || doc.AuditLog.Events != 4 || doc.AuditLog.Files[0] != "-" {
		t.Errorf("auditLog = %+v", doc.AuditLog)
	}
	beta := doc.Items[0].Versions[1]
	if beta.Name != "v1beta1" || !beta.Attention || len(beta.Clients) != 1 || len(beta.OwnClients) != 1 {
		t.Fatalf("v1beta1 = %+v", beta)
	}
	c := beta.Clients[0]
	if c["user"] != "system:serviceaccount:monitoring:exporter" || c["serviceAccount"] != "monitoring/exporter" || c["userAgent"] != "exporter/v1.2" || c["requests"] != 2.0 || c["first"] != "2026-11-28T10:00:00Z" {
		t.Errorf("client = %v", c)
	}
	if beta.OwnClients[0]["own"] != true {
		t.Errorf("own = %v", beta.OwnClients[0])
	}
}

// A user agent is the client's to choose: it cannot move the terminal.
func TestAuditClientsPrintable(t *testing.T) {
	text := strings.ReplaceAll(strings.SplitAfter(auditLines, "\n")[0], "exporter/v1.2", `evil\u001b[2J`)
	var buf bytes.Buffer
	if err := render.WriteUsage(&buf, render.FormatTable, FromAudit(quiet(), readLog(t, text))); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "\x1b") {
		t.Errorf("an escape reached the output:\n%q", buf.String())
	}
}
