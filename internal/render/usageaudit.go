package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// writeAuditClients writes, per version, a table of the clients the audit
// log names, then this plugin's own requests apart.
func writeAuditClients(b *strings.Builder, it UsageItem) error {
	for _, v := range it.Versions {
		if len(v.Clients) == 0 {
			fmt.Fprintf(b, "%s: no client in the audit log\n", v.Name)
		} else {
			fmt.Fprintf(b, "%s: %s in the audit log\n", v.Name, clientsWord(len(v.Clients)))
			t := newTable(b, "USER", "USER AGENT", "VERBS", "REQUESTS", "FIRST", "LAST")
			for _, c := range v.Clients {
				if err := t.Append(c.Who(), c.UserAgent, strings.Join(c.Verbs, ", "), fmt.Sprint(c.Requests), stamp(c.First), stamp(c.Last)); err != nil {
					return err
				}
			}
			if err := t.Render(); err != nil {
				return err
			}
		}
		for _, c := range v.OwnClients {
			fmt.Fprintf(b, "%s: this plugin's own: %s as %s (%s), %s to %s: not a client's\n", v.Name, requestsWord(c.Requests),
				Printable(c.Who()), Printable(strings.Join(c.Verbs, ", ")), stamp(c.First), stamp(c.Last))
		}
	}
	return nil
}

func clientsWord(n int) string {
	if n == 1 {
		return "1 client"
	}
	return fmt.Sprintf("%d clients", n)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339)
}

// auditLogRead says what the logs covered and what of them was not read.
func auditLogRead(a results.AuditLogRead) string {
	var b strings.Builder
	window := "no event, no window"
	if a.From != nil {
		window = "from " + stamp(*a.From) + " to " + stamp(*a.To)
	}
	files := "1 file"
	if len(a.Files) != 1 {
		files = fmt.Sprintf("%d files", len(a.Files))
	}
	fmt.Fprintf(&b, "audit log: %s, %d events %s; %d completed requests to these CRDs counted", files, a.Events, window, a.Requests)
	var envelopes []string
	for _, e := range []string{"eks", "aks", "gke"} {
		if n := a.Envelopes[e]; n > 0 {
			envelopes = append(envelopes, fmt.Sprintf("%d from %s's export", n, strings.ToUpper(e)))
		}
	}
	if len(envelopes) > 0 {
		fmt.Fprintf(&b, " (events: %s)", strings.Join(envelopes, ", "))
	}
	b.WriteString(".\n")
	if a.Skipped+a.Bad+a.Truncated > 0 {
		fmt.Fprintf(&b, "audit log: not read: %d records that are no audit event, %d lines that are no JSON or too long, %d inputs cut short.\n", a.Skipped, a.Bad, a.Truncated)
	}
	return b.String()
}

// auditLimits says what the audit log cannot show, so that "no client" is
// read as "none in this window".
const auditLimits = `CLIENTS: the audit log's events, each request counted once at its last stage (ResponseComplete,
or Panic): a watch still open when the log ends shows when it closes. Only the window above
is seen, only what the audit policy logs (level Metadata or above, get, list and watch of these
resources included), and only the API servers whose logs were given. A client is its user
(a ServiceAccount as namespace/name) and user agent; requests with this plugin's user agent
are its own and shown apart.
`
