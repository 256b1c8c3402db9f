package render

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
)

// onlyOwn: every request to the version while deprecated was this plugin's.
func onlyOwn(v VersionUsage) bool {
	return v.Requested == RequestedYes && !v.RequestedByOthers()
}

// WriteUsage renders who still uses each version: a table per CRD, what
// needs attention, and what the evidence can and cannot show.
func WriteUsage(w io.Writer, f Format, r UsageReport) error {
	if f.Document() {
		return writeDocument(w, f, r)
	}
	var b strings.Builder
	for i, it := range r.Items {
		if i > 0 {
			b.WriteString("\n")
		}
		listed := "no version served: objects not listed"
		if it.ListedAt != "" {
			listed = fmt.Sprintf("%s, listed at %s", stages.Objects(it.Objects), it.ListedAt)
		}
		fmt.Fprintf(&b, "%s (%s)\n", it.Name, listed)
		t := newTable(&b, "VERSION", "SERVED", "DEPRECATED", "STORAGE", "REQUESTED", "MANAGERS")
		for _, v := range it.Versions {
			if err := t.Append(v.Name, yesNo(v.Served), yesNo(v.Deprecated), yesNo(v.Storage), requestedCell(v), managersCell(it, v)); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
		for _, v := range it.Versions {
			switch {
			case v.Attention:
				fmt.Fprintf(&b, "attention: %s is %s and still used: %s\n", v.Name, notServedOrDeprecated(v), evidence(v))
			case onlyOwn(v):
				fmt.Fprintf(&b, "note: every request to %s while deprecated was this plugin's own (%s, %s, the last at %s): no other client requested it on this API server since it started\n",
					v.Name, strings.Join(v.OwnRequests.Commands, ", "), requestsWord(v.OwnRequests.Requests), v.OwnRequests.Last.UTC().Format(time.RFC3339))
			}
		}
		if r.AuditLog != nil {
			b.WriteString("\n")
			if err := writeAuditClients(&b, it); err != nil {
				return err
			}
		}
	}
	b.WriteString("\n")
	if r.Metrics.Message != "" {
		fmt.Fprintf(&b, "metrics: %s.\n", r.Metrics.Message)
	}
	if r.AuditLog != nil {
		b.WriteString(auditLogRead(*r.AuditLog))
	}
	b.WriteString(usageLimits(r.Metrics))
	if r.AuditLog != nil {
		b.WriteString(auditLimits)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func requestedCell(v VersionUsage) string {
	var cell string
	switch {
	case v.RequestedReason != "":
		return fmt.Sprintf("%s (%s)", v.Requested, v.RequestedReason)
	case v.RemovedRelease != "":
		cell = fmt.Sprintf("%s (%s; removed in %s)", v.Requested, strings.Join(v.RequestedResources, ", "), v.RemovedRelease)
	case v.Requested == RequestedYes:
		cell = fmt.Sprintf("%s (%s)", v.Requested, strings.Join(v.RequestedResources, ", "))
	default:
		return string(v.Requested)
	}
	switch own := v.OwnRequests; {
	case own == nil:
	case own.RequestsSince == 0:
		cell += fmt.Sprintf(": only this plugin's own %s", strings.Join(own.Commands, ", "))
	default:
		cell += fmt.Sprintf(": %s since this plugin's own %s", requestsWord(own.RequestsSince), strings.Join(own.Commands, ", "))
	}
	return cell
}

func requestsWord(n int64) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

// managersCell reads "helm (Apply) on 3 objects, kubectl (Update) on 1":
// the unit once, as a person would say it.
func managersCell(it UsageItem, v VersionUsage) string {
	if it.ListedAt == "" {
		return "unknown: objects not listed"
	}
	if len(v.Managers) == 0 {
		return "none"
	}
	parts := make([]string, len(v.Managers))
	for i, m := range v.Managers {
		n := fmt.Sprint(m.Objects)
		if i == 0 {
			n = stages.Objects(m.Objects)
		}
		parts[i] = fmt.Sprintf("%s (%s) on %s", m.Manager, m.Operation, n)
	}
	return strings.Join(parts, ", ")
}

func notServedOrDeprecated(v VersionUsage) string {
	if !v.Served {
		return "not served"
	}
	return "deprecated"
}

func evidence(v VersionUsage) string {
	var parts []string
	switch {
	case !v.RequestedByOthers():
	case v.OwnRequests != nil:
		parts = append(parts, fmt.Sprintf("requested by another client than this plugin (%s since its own %s)", requestsWord(v.OwnRequests.RequestsSince), strings.Join(v.OwnRequests.Commands, ", ")))
	default:
		parts = append(parts, "requested since the API server started")
	}
	switch n := len(v.Clients); n {
	case 0:
	case 1:
		parts = append(parts, "requested by "+Printable(v.Clients[0].Who())+" in the audit log")
	default:
		parts = append(parts, fmt.Sprintf("requested by %d clients in the audit log", n))
	}
	switch n := len(v.Managers); n {
	case 0:
	case 1:
		parts = append(parts, "last written by 1 field manager")
	default:
		parts = append(parts, fmt.Sprintf("last written by %d field managers", n))
	}
	return strings.Join(parts, "; ")
}

// usageLimits says what REQUESTED and MANAGERS prove and what they cannot
// see, so that "none" is not read as "nobody".
func usageLimits(m UsageMetrics) string {
	at := ""
	if m.StartedAt != nil {
		at = " at " + m.StartedAt.UTC().Format(time.RFC3339)
	}
	return `REQUESTED: the API server's apiserver_requested_deprecated_apis metric. "yes" means a request
(a read or a write, by anyone, this plugin's own included) reached the version while it
was deprecated, on the API server that answered only (behind a load balancer the others may
have seen other clients), since it started` + at + `.
The metric names no client, and this plugin's own verify, promote and migrate read the old
version too: where this machine recorded that its own runs made every such request (the
server's count of requests to the version grew by exactly theirs), the cell says "only this
plugin's own" and asks no attention; a request since, by anyone, makes it a client's again.
Runs on other machines, or spread over several API servers, are not told apart.
A version that is not deprecated, or not served, is not counted.
MANAGERS: the objects' managedFields, each field manager's last write to each object. A client
that only reads never shows; one whose later write used another version hides that it used
this one; system managers (kube-controller-manager, the storage version migrator, this plugin)
are left out. No use shown does not prove that no client uses a version.
`
}
