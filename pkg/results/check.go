package results

import "github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"

// FindingKind groups what `check` finds by what it means for the upgrade.
type FindingKind string

const (
	// FindingRejected: the API server refuses the new CRD.
	FindingRejected FindingKind = "rejected"
	// FindingLifecycle: the new CRD skips a lifecycle step (N → N+1).
	FindingLifecycle FindingKind = "lifecycle"
	// FindingSchema: a schema change that breaks clients or stored objects.
	FindingSchema FindingKind = "schema"
	// FindingObjects: live objects the new schema refuses.
	FindingObjects FindingKind = "objects"
	// FindingDeprecation: a version deprecated, unserved or removed by the
	// upgrade, for the release notes.
	FindingDeprecation FindingKind = "deprecation"
	// FindingClients: field managers still writing a version the upgrade
	// stops serving.
	FindingClients FindingKind = "clients"
	// FindingUnchecked: a cluster of a fleet the check could not run on.
	FindingUnchecked FindingKind = "unchecked"
	// FindingDropped: a CRD that the old manifests or the cluster have and
	// the new manifests lack: an apply that prunes deletes it, and with it
	// every object of it.
	FindingDropped FindingKind = "dropped"
)

// Finding is one thing an upgrade to a new CRD manifest would do that a
// person must know before applying it.
type Finding struct {
	// Cluster is the kubeconfig context checked, in a fleet.
	Cluster  string             `json:"cluster,omitempty"`
	Severity lifecycle.Severity `json:"severity"`
	Kind     FindingKind        `json:"kind"`
	CRD      string             `json:"crd"`
	Version  string             `json:"version,omitempty"`
	Rule     string             `json:"rule"`
	Path     string             `json:"path,omitempty"`
	// Object names the live objects concerned (namespace/name), for
	// objects: the first few, and how many more.
	Object string `json:"object,omitempty"`
	// Objects are every live object the finding is about, and Count how
	// many: one finding stands for every object with the same message.
	Objects []string `json:"objects,omitempty"`
	Count   int      `json:"count,omitempty"`
	// Message says what would happen.
	Message string `json:"message"`
	// Fix is what to do instead, in order: commands or release steps.
	Fix []lifecycle.Advice `json:"fix,omitempty"`
}

// Client is someone besides this plugin still using a version, with the
// evidence.
type Client struct {
	// Name is a field manager, or "requests" for the API server's count.
	Name     string `json:"name"`
	Evidence string `json:"evidence"`
}
