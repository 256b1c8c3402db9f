package render

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// WriteStatus renders the status of CRDs: a table of versions, then a table
// of what to do next per CRD and any problems; or one document.
func WriteStatus(w io.Writer, f Format, items []StatusItem, noHeaders bool) error {
	if f.Document() {
		items = append([]StatusItem{}, items...)
		for i, it := range items {
			if it.Next.Step != nil {
				items[i].Next.Command = Command(*it.Next.Step)
			}
		}
		return writeDocument(w, f, StatusReport{APIVersion: APIVersion, Kind: "StatusReport", Items: items})
	}
	if len(items) == 0 {
		return nil
	}
	wide := f == FormatWide
	// A fleet view starts every row with the cluster.
	fleet := slices.ContainsFunc(items, func(it StatusItem) bool { return it.Cluster != "" })
	in := func(it StatusItem, row ...string) []string {
		if fleet {
			return append([]string{it.Cluster}, row...)
		}
		return row
	}
	header := []string{"CRD", "VERSION", "SERVED", "STORAGE", "DEPRECATED", "STORED", "STAGE"}
	if wide {
		header = append(header, "OBJECTS", "WARNING")
	}
	versions := newTableWith(w, !noHeaders, in(StatusItem{Cluster: "CLUSTER"}, header...)...)
	for _, it := range items {
		for i, v := range it.Versions {
			// Without headers the table is for grep and awk: every row
			// names its CRD and has every column.
			name, objects := "", ""
			if i == 0 || noHeaders {
				name = it.Name
				objects = count(it.Objects)
			}
			warning := v.DeprecationWarning
			if warning == "" && noHeaders {
				warning = "<none>"
			}
			row := []string{name, v.Name, yesNo(v.Served), yesNo(v.Storage), yesNo(v.Deprecated), yesNo(v.Stored), string(v.Stage)}
			if wide {
				row = append(row, objects, warning)
			}
			if err := versions.Append(in(it, row...)...); err != nil {
				return err
			}
		}
	}
	if err := versions.Render(); err != nil || noHeaders {
		// One table, one version a line: the next steps and the problems
		// are in -o json for a script.
		return err
	}

	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	// The cluster's own migrations get a column only where there are any,
	// which on most clusters there are not.
	migrations := slices.ContainsFunc(items, func(it StatusItem) bool { return it.ClusterMigration != nil || it.MigratingCondition != nil })
	header = []string{"CRD", "CONVERSION", "NEXT"}
	if migrations {
		header = []string{"CRD", "CONVERSION", "CLUSTER MIGRATION", "NEXT"}
	}
	next := newTableWith(w, true, in(StatusItem{Cluster: "CLUSTER"}, header...)...)
	for _, it := range items {
		row := []string{it.Name, it.Conversion, nextCell(it.Next)}
		if migrations {
			row = []string{it.Name, it.Conversion, clusterMigration(it), nextCell(it.Next)}
		}
		if err := next.Append(in(it, row...)...); err != nil {
			return err
		}
	}
	if err := next.Render(); err != nil {
		return err
	}
	if err := writeMigrateAll(w, items); err != nil {
		return err
	}
	if err := writeReleaseNote(w, items); err != nil {
		return err
	}
	return writeProblems(w, items, in)
}

// writeMigrateAll names the one command that takes every migrate step
// NEXT lists, where there are several on one cluster.
func writeMigrateAll(w io.Writer, items []StatusItem) error {
	n := 0
	for _, it := range items {
		if it.Cluster != "" {
			return nil // a fleet: one command per cluster
		}
		if s := it.Next.Step; s != nil && Command(*s) == Command(*stages.MigrateStep(it.Name)) {
			n++
		}
	}
	if n < 2 {
		return nil
	}
	_, err := fmt.Fprintf(w, "\nthe %d migrations above, in one command: %s\n", n, Command(*stages.MigrateAllStep()))
	return err
}

// clusterMigration says where the cluster's own migration of the CRD
// stands: its newest StorageVersionMigration and the CRD's
// StorageMigrating condition, which the migrator sets.
func clusterMigration(it StatusItem) string {
	var parts []string
	if m := it.ClusterMigration; m != nil {
		s := fmt.Sprintf("%s: %s", m.Name, m.State)
		switch m.State {
		case results.ClusterMigrationFailed:
			s += fmt.Sprintf(" (%s: %s)", m.Reason, m.Message)
		case results.ClusterMigrationPending:
			s += " (no controller has taken it up)"
		}
		parts = append(parts, s)
	}
	if c := it.MigratingCondition; c != nil {
		parts = append(parts, fmt.Sprintf("StorageMigrating=%s (%s)", c.Status, c.Reason))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

func writeProblems(w io.Writer, items []StatusItem, in func(StatusItem, ...string) []string) error {
	t := newTableWith(w, true, in(StatusItem{Cluster: "CLUSTER"}, "CRD", "SEVERITY", "PROBLEM")...)
	found := false
	for _, it := range items {
		for _, p := range it.Problems {
			found = true
			if err := t.Append(in(it, it.Name, string(p.Severity), p.Message)...); err != nil {
				return err
			}
		}
	}
	if !found {
		return nil
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return t.Render()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func count(n *int64) string {
	if n == nil {
		return ""
	}
	return strconv.FormatInt(*n, 10)
}

// writeReleaseNote says, where no release was given, that a step toward one may differ: a
// downgrade steps back where the cluster alone would re-store forward, and a version the release
// removes is stopped and cleaned before it lands.
func writeReleaseNote(w io.Writer, items []StatusItem) error {
	for _, it := range items {
		if it.Release {
			return nil
		}
	}
	for _, it := range items {
		if it.Next.Action == lifecycle.ActionRun || it.Next.Action == lifecycle.ActionReady {
			_, err := io.WriteString(w, "\nbefore an upgrade, the step toward the release can differ: kubectl crdversion status --release NEW\n")
			return err
		}
	}
	return nil
}
