package report

import (
	"time"

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
