package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// StatusItem is one CRD in a status report.
type StatusItem struct {
	lifecycle.Assessment
	// Objects counts the CRD's objects; set only by -o wide (and in the
	// documents), nil when not counted or not countable (no served version).
	Objects *int64 `json:"objects,omitempty"`
	// ClusterMigration is the newest StorageVersionMigration of the CRD's
	// resource, when the cluster serves them and has one.
	ClusterMigration *results.ClusterMigration `json:"clusterMigration,omitempty"`
}

// StatusReport is the document `status -o json|yaml` prints.
type StatusReport struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Items      []StatusItem `json:"items"`
}

// WriteStatus renders the status of CRDs: a table of versions, then a table
// of what to do next per CRD and any problems; or one document.
func WriteStatus(w io.Writer, f Format, items []StatusItem, noHeaders bool) error {
	if f.Document() {
		if items == nil {
			items = []StatusItem{}
		}
		return writeDocument(w, f, StatusReport{APIVersion: APIVersion, Kind: "StatusReport", Items: items})
	}
	if len(items) == 0 {
		return nil
	}
	wide := f == FormatWide
	header := []string{"CRD", "VERSION", "SERVED", "STORAGE", "DEPRECATED", "STORED", "STAGE"}
	if wide {
		header = append(header, "OBJECTS", "WARNING")
	}
	versions := newTableWith(w, !noHeaders, header...)
	for _, it := range items {
		for i, v := range it.Versions {
			name, objects := "", ""
			if i == 0 {
				name = it.Name
				objects = count(it.Objects)
			}
			row := []string{name, v.Name, yesNo(v.Served), yesNo(v.Storage), yesNo(v.Deprecated), yesNo(v.Stored), string(v.Stage)}
			if wide {
				row = append(row, objects, v.DeprecationWarning)
			}
			if err := versions.Append(row...); err != nil {
				return err
			}
		}
	}
	if err := versions.Render(); err != nil {
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
	next := newTableWith(w, !noHeaders, header...)
	for _, it := range items {
		row := []string{it.Name, it.Conversion, it.Next.String()}
		if migrations {
			row = []string{it.Name, it.Conversion, clusterMigration(it), it.Next.String()}
		}
		if err := next.Append(row...); err != nil {
			return err
		}
	}
	if err := next.Render(); err != nil {
		return err
	}
	return writeProblems(w, items, noHeaders)
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

func writeProblems(w io.Writer, items []StatusItem, noHeaders bool) error {
	t := newTableWith(w, !noHeaders, "CRD", "SEVERITY", "PROBLEM")
	found := false
	for _, it := range items {
		for _, p := range it.Problems {
			found = true
			if err := t.Append(it.Name, string(p.Severity), p.Message); err != nil {
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
