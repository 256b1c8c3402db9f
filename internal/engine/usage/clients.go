package usage

import (
	"fmt"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"slices"
)

// Requests names, in a refusal, the clients the deprecated-API metric counts: it names none.
const Requests = "requests"

// Clients names who but this plugin still uses version: each field manager whose last write
// used it, and the server's request count where this plugin's records do not account for all
// of it or the metric is unreadable (what cannot be seen is not taken as nobody).
func (u CRDUsage) Clients(version string, m *DeprecatedAPIs) []results.Client {
	var out []results.Client
	if u.Managers != nil {
		for _, mu := range u.Managers.Managers {
			if mu.Version == version && !slices.ContainsFunc(out, func(c results.Client) bool { return c.Name == mu.Manager }) {
				out = append(out, results.Client{Name: mu.Manager, Evidence: fmt.Sprintf("its last write to %d objects used %s (managedFields, %s)", mu.Objects, version, mu.Operation)})
			}
		}
	}
	switch _, requested := u.Requests[version]; {
	case m == nil:
	case m.Access != MetricsRead:
		out = append(out, results.Client{Name: Requests, Evidence: fmt.Sprintf("requests to %s cannot be seen: %s", version, m.Unreadable())})
	case requested:
		own, ok := u.Own[version]
		if !ok || own.Since > 0 {
			out = append(out, results.Client{Name: Requests, Evidence: fmt.Sprintf("the API server counted requests to %s since it started (%s), not all of them this plugin's; the metric names no client (the audit log does)", version, m.StartedAt.UTC().Format("2006-01-02 15:04:05Z"))})
		}
	}
	return out
}
