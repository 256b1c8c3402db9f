package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// Requested is what the deprecated-API metric says about a version.
type Requested string

const (
	RequestedYes     Requested = "yes"
	RequestedNo      Requested = "no"
	RequestedUnknown Requested = "unknown"
)

// UsageReport is the document `usage -o json|yaml` prints.
type UsageReport struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metrics    UsageMetrics `json:"metrics"`
	// Attention counts the versions, deprecated or not served, that still
	// show use.
	Attention int `json:"attention"`
	// AuditLog, where --audit-log was given, says what the logs covered:
	// the window, the events read, what could not be read.
	AuditLog *results.AuditLogRead `json:"auditLog,omitempty"`
	Items    []UsageItem           `json:"items"`
}

// UsageMetrics says where REQUESTED comes from.
type UsageMetrics struct {
	// Access is read, notAllowed or notServed.
	Access string `json:"access"`
	// Message says, when /metrics was not read, why and what is missing.
	Message string `json:"message,omitempty"`
	// StartedAt is when the API server that answered started: the metric
	// covers requests since.
	StartedAt *time.Time `json:"startedAt,omitempty"`
}

// UsageItem is one CRD.
type UsageItem struct {
	Name     string `json:"name"`
	Group    string `json:"group"`
	Resource string `json:"resource"`
	// ListedAt is the version objects were listed at for their managedFields;
	// empty when no version is served.
	ListedAt string         `json:"listedAt,omitempty"`
	Objects  int64          `json:"objects"`
	Versions []VersionUsage `json:"versions"`
}

// VersionUsage is one version of a CRD, highest priority first.
type VersionUsage struct {
	Name       string `json:"name"`
	Served     bool   `json:"served"`
	Deprecated bool   `json:"deprecated"`
	Storage    bool   `json:"storage"`
	// Requested is yes, no or unknown; RequestedReason says why unknown.
	Requested       Requested `json:"requested"`
	RequestedReason string    `json:"requestedReason,omitempty"`
	// RequestedResources names what was requested: the resource, or
	// resource/subresource.
	RequestedResources []string `json:"requestedResources,omitempty"`
	RemovedRelease     string   `json:"removedRelease,omitempty"`
	// OwnRequests, where requested is yes, is what this plugin's own
	// requests to the version account for on the API server that answered,
	// as this machine recorded them; absent where it recorded none.
	OwnRequests *OwnRequestsUsage `json:"ownRequests,omitempty"`
	// Managers are the field managers whose last write to an object used
	// this version, most objects first.
	Managers []ManagerUsage `json:"managers"`
	// Clients, where an audit log was read, are those that requested this
	// version in it, most requests first; OwnClients are this plugin's own
	// requests (its user agent), not counted as a client's.
	Clients    []results.AuditClient `json:"clients,omitempty"`
	OwnClients []results.AuditClient `json:"ownClients,omitempty"`
	// Attention: deprecated or not served, and still used.
	Attention bool `json:"attention"`
}

// OwnRequestsUsage is what this plugin's own commands requested of a
// deprecated version, told from other clients' by the API server's request
// count.
type OwnRequestsUsage struct {
	// Commands are the plugin's commands that sent Requests requests.
	Commands []string  `json:"commands"`
	Requests int64     `json:"requests"`
	Last     time.Time `json:"last"`
	// RequestsSince counts the requests to the version the API server
	// served after this plugin's last: 0 means every request to it while
	// deprecated was this plugin's own; more, that another client used it.
	RequestsSince int64 `json:"requestsSince"`
}

// ManagerUsage is one field manager of a version.
type ManagerUsage struct {
	Manager   string `json:"manager"`
	Operation string `json:"operation"`
	Objects   int64  `json:"objects"`
}

// RequestedByOthers: the metric names the version and this plugin's own
// requests do not account for it all.
func (v VersionUsage) RequestedByOthers() bool {
	return v.Requested == RequestedYes && (v.OwnRequests == nil || v.OwnRequests.RequestsSince > 0)
}

// onlyOwn: every request to the version while deprecated was this plugin's.
func (v VersionUsage) onlyOwn() bool {
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
			listed = fmt.Sprintf("%s, listed at %s", lifecycle.Objects(it.Objects), it.ListedAt)
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
			case v.onlyOwn():
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
			n = lifecycle.Objects(m.Objects)
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
