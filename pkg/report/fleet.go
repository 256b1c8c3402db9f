package report

import (
	"fmt"
	"io"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// ClusterRun is where one cluster of a fleet run ended.
type ClusterRun struct {
	Cluster string `json:"cluster"`
	// Result is "done", "attention" (the work ran and needs a person),
	// "error" (it could not run) or "not started" (nothing was sent).
	Result string `json:"result"`
	// Why says what stopped it; empty when done.
	Why      string        `json:"why,omitempty"`
	CRDs     int           `json:"crds"`
	Duration time.Duration `json:"duration"`
}

// WriteFleetMigrate renders a fleet's migrations: each cluster's report
// under its name, then a row per cluster. A document holds every CRD's
// result, each naming its cluster, and the clusters.
func WriteFleetMigrate(w io.Writer, f Format, runs []ClusterRun, rs []*results.Result, dryRun bool) error {
	if f.Document() {
		if rs == nil {
			rs = []*results.Result{}
		}
		return writeDocument(w, f, MigrateReport{APIVersion: APIVersion, Kind: "MigrateReport", Items: rs, Clusters: runs})
	}
	for _, run := range runs {
		var mine []*results.Result
		for _, r := range rs {
			if r.Cluster == run.Cluster {
				mine = append(mine, r)
			}
		}
		if len(mine) == 0 {
			continue
		}
		if _, err := fmt.Fprintf(w, "cluster %s:\n", run.Cluster); err != nil {
			return err
		}
		if err := WriteMigrate(w, f, mine, dryRun); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	return writeClusterRuns(w, runs)
}

// writeClusterRuns is the fleet's table: a row per cluster, in the order
// they were taken.
func writeClusterRuns(w io.Writer, runs []ClusterRun) error {
	t := newTable(w, "CLUSTER", "RESULT", "CRDS", "TOOK", "WHY")
	for _, r := range runs {
		crds, took := fmt.Sprint(r.CRDs), r.Duration.Round(time.Millisecond).String()
		if r.Result == "not started" {
			crds, took = "-", "-"
		}
		if err := t.Append(r.Cluster, r.Result, crds, took, r.Why); err != nil {
			return err
		}
	}
	return t.Render()
}
