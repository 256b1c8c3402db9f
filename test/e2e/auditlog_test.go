package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// auditEvent is one line as kube-apiserver's log backend writes it.
func auditEvent(stage, verb, user, agent, group, version string, at time.Time) string {
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"%d","stage":"%s","requestURI":"/apis/%s/%s/namespaces/default/widgets","verb":"%s","user":{"username":"%s","groups":["system:authenticated"]},"sourceIPs":["10.0.0.7"],"userAgent":"%s","objectRef":{"resource":"widgets","namespace":"default","apiGroup":"%s","apiVersion":"%s"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"%s","stageTimestamp":"%s","annotations":{"k8s.io/deprecated":"true"}}`,
		at.UnixNano(), stage, group, version, verb, user, agent, group, version, at.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano)) + "\n"
}

// The sandbox has no audit backend: the log is written as kube-apiserver
// writes it. usage names the ServiceAccount that reads the deprecated
// version (and exits 3, where the metric and managedFields show nothing),
// keeps the plugin's own requests apart, reads a rotated folder with a
// gzip'd file the same, and refuses a file that is not an audit log with
// one error line.
func TestUsageReadsTheAuditLog(t *testing.T) {
	e := newEnv(t, 0)
	const group = "auditlog.example.com" // its own: the metrics registry is shared
	crd := fixtures.CRD(group, "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1beta1", Served: true, Deprecated: true},
		fixtures.Version{Name: "v1", Served: true, Storage: true})
	if _, err := e.clients.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	const exporter = "system:serviceaccount:monitoring:exporter"
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	var older, newer strings.Builder
	for i := range 3 {
		at := t0.Add(time.Duration(i) * time.Minute)
		older.WriteString(auditEvent("RequestReceived", "list", exporter, "exporter/v1.2.3", group, "v1beta1", at))
		older.WriteString(auditEvent("ResponseComplete", "list", exporter, "exporter/v1.2.3", group, "v1beta1", at))
	}
	newer.WriteString(auditEvent("ResponseComplete", "get", exporter, "exporter/v1.2.3", group, "v1beta1", t0.Add(time.Hour)))
	newer.WriteString(auditEvent("ResponseComplete", "patch", "jane", "kubectl-crdversion/v0.4.0", group, "v1beta1", t0.Add(time.Hour+time.Minute)))
	newer.WriteString(auditEvent("ResponseComplete", "update", "system:serviceaccount:widgets:operator", "operator/v2", group, "v1", t0.Add(2*time.Hour)))

	dir := t.TempDir()
	single := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(single, []byte(older.String()+newer.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// kube-apiserver's folder: the rotated file compressed, the live one not.
	rotated := filepath.Join(dir, "rotated")
	if err := os.Mkdir(rotated, 0o700); err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(older.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rotated, "audit-2026-11-28T10-30-00.000.log.gz"), z.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rotated, "audit.log"), []byte(newer.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	// Without the log, nothing shows use of v1beta1.
	e.plugin("usage", crd.Name).mustCode(t, 0)

	for _, path := range []string{single, rotated} {
		r := e.plugin("usage", crd.Name, "--audit-log", path).mustCode(t, 3)
		contains(t, "usage --audit-log "+path, r.stdout,
			"attention: v1beta1 is deprecated and still used: requested by monitoring/exporter (ServiceAccount) in the audit log",
			"v1beta1: 1 client in the audit log",
			"monitoring/exporter (ServiceAccount)   exporter/v1.2.3   get, list   4          2026-11-28T10:00:00Z   2026-11-28T11:00:00Z",
			"v1beta1: this plugin's own: 1 request as jane (patch)",
			"widgets/operator (ServiceAccount)   operator/v2",
			"9 events from 2026-11-28T10:00:00Z to 2026-11-28T12:00:00Z; 6 completed requests to these CRDs counted")
	}

	// From stdin, as a document.
	r := e.kubectlIn(older.String()+newer.String(), "crdversion", "usage", crd.Name, "--audit-log", "-", "-o", "json").mustCode(t, 3)
	var doc report.UsageReport
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("usage -o json: %v\n%s", err, r.stdout)
	}
	beta := doc.Items[0].Versions[1]
	if doc.AuditLog == nil || doc.AuditLog.Events != 9 || beta.Name != "v1beta1" || !beta.Attention ||
		len(beta.Clients) != 1 || beta.Clients[0].ServiceAccount != "monitoring/exporter" || beta.Clients[0].Requests != 4 ||
		len(beta.OwnClients) != 1 || beta.OwnClients[0].User != "jane" {
		t.Fatalf("usage -o json: %+v\n%s", doc.AuditLog, r.stdout)
	}

	// Not an audit log: one error line, exit 1, nothing on stdout.
	notLog := filepath.Join(dir, "apiserver.log")
	if err := os.WriteFile(notLog, []byte("I1128 10:00:00.000000       1 server.go:100] Serving securely on [::]:6443\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = e.plugin("usage", crd.Name, "--audit-log", single, "--audit-log", notLog).mustCode(t, 1)
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "error: --audit-log: "+notLog+" is not an audit log: no audit.k8s.io/v1 Event in its 1 lines") || r.stdout != "" {
		t.Fatalf("not an audit log:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}
