package report

import (
	"encoding/json"
	"time"
)

// FleetReport is a fleet run's document: each cluster's own document, as
// the command prints it on one cluster.
type FleetReport struct {
	APIVersion string      `json:"apiVersion"`
	Kind       string      `json:"kind"`
	Items      []FleetItem `json:"items"`
}

// FleetItem is one cluster of a FleetReport.
type FleetItem struct {
	ClusterRun
	// Report is the cluster's own document; absent where none was printed
	// (not started, unreachable, refused before a report).
	Report json.RawMessage `json:"report,omitempty"`
	// Output is what the cluster printed where it printed no document.
	Output string `json:"output,omitempty"`
}

// ClusterRun is where one cluster of a fleet run ended.
type ClusterRun struct {
	Cluster string `json:"cluster"`
	// Result is "done", "attention" (the work ran and needs a person),
	// "error" (it could not run) or "not started" (nothing was sent).
	Result string `json:"result"`
	// Why says what stopped it; empty when done.
	Why string `json:"why,omitempty"`
	// CRDs is how many CRDs the run took up (migrate).
	CRDs     int           `json:"crds,omitempty"`
	Duration time.Duration `json:"duration"`
}
