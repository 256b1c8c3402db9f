package migration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/auditlog"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// line is one audit event as kube-apiserver's log backend writes it.
func line(user, agent, verb, version string, at time.Time) string {
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"%d","stage":"ResponseComplete","verb":%q,"user":{"username":%q},"userAgent":%q,"objectRef":{"resource":"widgets","namespace":"a","apiGroup":"example.com","apiVersion":"example.com/%s"},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`,
		at.UnixNano(), verb, user, agent, version, at.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
}

// The gate with an audit log: a user but this plugin that requested the
// version after the prune is named; before it is history; the plugin's own
// requests never count; a log that cannot show the time after the prune,
// or that logs no read of the resource, refuses as "requests".
func TestAuditGate(t *testing.T) {
	prune := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	sa := "system:serviceaccount:monitoring:exporter"
	own := "kubectl-crdversion/v1.2.3"
	migration := line("admin", own, "list", "v1", prune.Add(-time.Minute))
	crd := crdtest.Widgets([]string{"v1"}, "v1beta1:served,deprecated", "v1:served,storage")
	for _, tc := range []struct {
		name  string
		since time.Time
		lines []string
		// want are the clients named, "requests" for an unseen window.
		want []string
		says string
	}{
		{"a reader after the prune", prune, []string{migration,
			line(sa, "exporter/2.0", "list", "v1beta1", prune.Add(time.Minute)),
			line(sa, "exporter/2.0", "get", "v1beta1", prune.Add(2*time.Minute))},
			[]string{sa}, "ServiceAccount monitoring/exporter requested v1beta1 (get, list; user agent \"exporter/2.0\"): 2 requests since this plugin's prune of storedVersions, the last at 2026-11-28T10:02:00Z (audit log)"},
		{"a reader in the prune's second", prune.Add(500 * time.Millisecond), []string{migration,
			line(sa, "exporter/2.0", "get", "v1beta1", prune.Add(100*time.Millisecond))}, []string{sa}, ""},
		{"a reader before the prune is history", prune, []string{
			line(sa, "exporter/2.0", "get", "v1beta1", prune.Add(-2*time.Minute)), migration,
			line("bob", "kubectl/v1.37", "get", "v1", prune.Add(time.Minute))}, nil, ""},
		{"a reader from before to after the prune", prune, []string{
			line(sa, "exporter/2.0", "get", "v1beta1", prune.Add(-2*time.Minute)), migration,
			line(sa, "exporter/2.0", "watch", "v1beta1", prune.Add(time.Minute)),
			line(sa, "exporter/3.0", "get", "v1beta1", prune.Add(-time.Minute))},
			[]string{sa}, "(get, watch; user agent \"exporter/2.0\"): 2 requests in the log from 2026-11-28T09:58:00Z, the last at 2026-11-28T10:01:00Z, after this plugin's prune"},
		{"the plugin's own requests", prune, []string{migration,
			line("admin", own, "get", "v1beta1", prune.Add(time.Minute))}, nil, ""},
		{"a reader of the new version", prune, []string{migration,
			line(sa, "exporter/2.0", "get", "v1", prune.Add(time.Minute))}, nil, ""},
		{"no prune: every request counts", time.Time{}, []string{
			line(sa, "exporter/2.0", "get", "v1beta1", prune.Add(-time.Hour))},
			[]string{sa}, "every request in the log counts"},
		{"the log ends before the prune", prune, []string{
			line(sa, "exporter/2.0", "get", "v1", prune.Add(-time.Hour)), migration},
			[]string{"requests"}, "the audit log ends at 2026-11-28T09:59:00Z, before this plugin's prune of storedVersions at 2026-11-28T10:00:00Z"},
		{"no read logged", prune, []string{
			line("admin", own, "update", "v1", prune.Add(-time.Minute)),
			line(sa, "exporter/2.0", "update", "v1", prune.Add(time.Minute))},
			[]string{"requests"}, "holds no get, list or watch of widgets.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "audit.log")
			if err := os.WriteFile(f, []byte(strings.Join(tc.lines, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			log, err := auditlog.Read(t.Context(), []string{f}, auditlog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := auditGate(log, crd, []string{"v1beta1"}, tc.since)
			var names []string
			for _, c := range got {
				names = append(names, c.Name)
			}
			if !slices.Equal(names, tc.want) {
				t.Fatalf("named %q, want %q: %+v", names, tc.want, got)
			}
			if tc.says != "" && !strings.Contains(got[0].Evidence, tc.says) {
				t.Errorf("evidence %q does not say %q", got[0].Evidence, tc.says)
			}
		})
	}
}

// --despite-clients takes a ServiceAccount's user as the log names it, or
// its NAMESPACE/NAME; nothing else.
func TestDespiteNamed(t *testing.T) {
	sa := results.Client{Name: "system:serviceaccount:monitoring:exporter"}
	for _, tc := range []struct {
		names []string
		cl    results.Client
		want  bool
	}{
		{[]string{"system:serviceaccount:monitoring:exporter"}, sa, true},
		{[]string{"monitoring/exporter"}, sa, true},
		{[]string{"exporter"}, sa, false},
		{[]string{"monitoring/other", "requests"}, sa, false},
		{[]string{"requests"}, results.Client{Name: "requests"}, true},
		{[]string{"team-a-controller"}, results.Client{Name: "team-a-controller"}, true},
		{[]string{"/"}, results.Client{Name: "bob"}, false},
	} {
		if got := despiteNamed(tc.names, tc.cl); got != tc.want {
			t.Errorf("despiteNamed(%q, %q) = %v, want %v", tc.names, tc.cl.Name, got, tc.want)
		}
	}
}
