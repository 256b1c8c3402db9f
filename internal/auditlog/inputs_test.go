package auditlog

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func events(n int, start time.Time) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(line("ResponseComplete", "get", exporter, "exporter/v1.2", "example.com", "v1beta1", "widgets", start.Add(time.Duration(i)*time.Second)))
		b.WriteByte('\n')
	}
	return b.String()
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func half(b []byte) []byte { return b[:len(b)/2] }

func write(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var widgetsOnly = Options{Resources: []schema.GroupResource{v1beta1.GroupResource()}}

// kube-apiserver's folder after rotation: the live file, older ones named by
// time, some compressed; a stray file of another program left out, said.
func TestRotatedFolder(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "audit-2026-11-28T10-00-00.000.log.gz", gzipped(t, events(3, t0)))
	write(t, dir, "audit-2026-11-28T11-00-00.000.log", []byte(events(2, t0.Add(time.Hour))))
	write(t, dir, "audit.log", []byte(events(1, t0.Add(2*time.Hour))))
	write(t, dir, "kube-apiserver.log", []byte("I1128 10:00:00.000000       1 server.go:100] started\n"))
	write(t, dir, "README", []byte("not read"))
	res, err := Read(t.Context(), []string{dir}, widgetsOnly)
	if err != nil {
		t.Fatal(err)
	}
	clients, _ := res.Clients(v1beta1)
	if len(clients) != 1 || clients[0].Requests != 6 || !clients[0].First.Equal(t0) || !clients[0].Last.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("clients = %+v", clients)
	}
	if len(res.Read.Files) != 4 || res.Read.Bad != 1 {
		t.Errorf("read = %+v", res.Read)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "kube-apiserver.log: no audit event in its 1 lines: not an audit log, left out") {
		t.Errorf("warnings = %q", res.Warnings)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	long := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","pad":"` + strings.Repeat("x", 300<<10) + `"}`
	for _, tc := range []struct {
		name    string
		data    []byte
		events  int64
		bad     int64
		trunc   int64
		skipped int64
		warning string
		notLog  bool
	}{
		{name: "a log cut mid-line", data: []byte(events(2, t0) + events(1, t0)[:100]), events: 2, trunc: 1, warning: "its last line is cut short"},
		{name: "a whole last line without a newline", data: []byte(strings.TrimSuffix(events(2, t0), "\n")), events: 2},
		{name: "a line longer than the reader takes", data: []byte(events(1, t0) + long + "\n" + events(1, t0)), events: 2, bad: 1, warning: "1 lines not read (no JSON, or longer than 256 KiB), the first at line 2"},
		{name: "other kinds and other programs' JSON", data: []byte(events(1, t0) + `{"kind":"Event","apiVersion":"v1","reason":"Started"}` + "\n" + `{"level":"info","message":"hello"}` + "\n" + `{"message":{"nested":1}}` + "\n"), events: 1, skipped: 3},
		{name: "a compressed log cut short", data: half(gzipped(t, events(50, t0))), events: 2, trunc: 1, warning: "the compressed stream ends early"},
		{name: "not an audit log", data: []byte("apiVersion: v1\nkind: ConfigMap\n"), bad: 2, notLog: true},
		{name: "JSON, but no audit event", data: []byte(`{"kind":"Event","apiVersion":"v1"}` + "\n"), skipped: 1, notLog: true},
		{name: "a document, but no audit event", data: []byte("{\n  \"events\": [\n    {\"message\": \"I1128 started\"}\n  ]\n}\n"), skipped: 1, notLog: true},
		{name: "empty", data: nil, warning: "is empty: no event read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".log", tc.data)
			o := widgetsOnly
			o.maxLine = 256 << 10
			res, err := Read(t.Context(), []string{p}, o)
			var notLog *NotAuditLogError
			if tc.notLog {
				if !errors.As(err, &notLog) || notLog.Path != p {
					t.Fatalf("err = %v, want NotAuditLogError naming %s", err, p)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := res.Read
			if got.Events != tc.events || got.Bad != tc.bad || got.Truncated != tc.trunc || got.Skipped != tc.skipped {
				t.Errorf("events %d bad %d truncated %d skipped %d, want %d %d %d %d", got.Events, got.Bad, got.Truncated, got.Skipped, tc.events, tc.bad, tc.trunc, tc.skipped)
			}
			if w := strings.Join(res.Warnings, "\n"); (tc.warning == "") != (w == "") || !strings.Contains(w, tc.warning) {
				t.Errorf("warnings = %q, want %q", w, tc.warning)
			}
		})
	}
}

func TestNoLogInFolder(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "notes.txt", []byte("x"))
	if _, err := Read(t.Context(), []string{dir}, widgetsOnly); err == nil || !strings.Contains(err.Error(), "holds no audit log") {
		t.Errorf("err = %v", err)
	}
	write(t, dir, "other.log", []byte("plain text\n"))
	var notLog *NotAuditLogError
	if _, err := Read(t.Context(), []string{dir}, widgetsOnly); !errors.As(err, &notLog) || notLog.Path != dir {
		t.Errorf("err = %v, want NotAuditLogError naming the folder", err)
	}
}
