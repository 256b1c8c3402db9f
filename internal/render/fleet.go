package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

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
	return writeClusterRuns(w, runs, true)
}

// writeClusterRuns is the fleet's table: a row per cluster, in the order
// they were taken.
func writeClusterRuns(w io.Writer, runs []ClusterRun, crds bool) error {
	header := []string{"CLUSTER", "RESULT", "CRDS", "TOOK", "WHY"}
	if !crds {
		header = slices.Delete(header, 2, 3)
	}
	t := newTable(w, header...)
	for _, r := range runs {
		n, took := fmt.Sprint(r.CRDs), r.Duration.Round(time.Millisecond).String()
		if r.Result == "not started" {
			n, took = "-", "-"
		}
		row := []string{r.Cluster, r.Result, n, took, r.Why}
		if !crds {
			row = slices.Delete(row, 2, 3)
		}
		if err := t.Append(row...); err != nil {
			return err
		}
	}
	return t.Render()
}

// WriteFleet renders a fleet run: each cluster's output under its name,
// then a row per cluster; or one FleetReport.
func WriteFleet(w io.Writer, f Format, runs []ClusterRun, outputs [][]byte) error {
	if f.Document() {
		items := make([]FleetItem, len(runs))
		for i, r := range runs {
			items[i].ClusterRun = r
			switch out := bytes.TrimSpace(outputs[i]); {
			case len(out) == 0:
			case json.Valid(out):
				items[i].Report = out
			default:
				items[i].Output = string(out)
			}
		}
		return writeDocument(w, f, FleetReport{APIVersion: APIVersion, Kind: "FleetReport", Items: items})
	}
	for i, r := range runs {
		if len(bytes.TrimSpace(outputs[i])) == 0 {
			continue
		}
		if _, err := fmt.Fprintf(w, "cluster %s:\n%s\n", r.Cluster, bytes.TrimRight(outputs[i], "\n")); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	return writeClusterRuns(w, runs, false)
}
