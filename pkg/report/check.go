package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// CheckReport is the document `check -o json|yaml` prints.
type CheckReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Against is what the new CRDs were compared with: "cluster" or "files".
	Against  string              `json:"against"`
	CRDs     int                 `json:"crds"`
	Errors   int                 `json:"errors"`
	Warnings int                 `json:"warnings"`
	Notes    int                 `json:"notes"`
	Findings []lifecycle.Finding `json:"findings"`
}

// NewCheckReport counts the findings and spells out the commands of their
// fixes.
func NewCheckReport(against string, crds int, findings []lifecycle.Finding) CheckReport {
	r := CheckReport{APIVersion: APIVersion, Kind: "CheckReport", Against: against, CRDs: crds, Findings: append([]lifecycle.Finding{}, findings...)}
	for i, f := range findings {
		r.Findings[i].Fix = spelled(f.Fix)
		switch f.Severity {
		case lifecycle.SeverityError:
			r.Errors++
		case lifecycle.SeverityNote:
			r.Notes++
		default:
			r.Warnings++
		}
	}
	return r
}

// WriteCheck renders what check found: a table of findings and then, for
// each that has one, the fix in order; or release-note sections.
func WriteCheck(w io.Writer, f Format, r CheckReport) error {
	switch {
	case f.Document():
		return writeDocument(w, f, r)
	case f == FormatMarkdown:
		return writeCheckMarkdown(w, r)
	}
	if len(r.Findings) == 0 {
		_, err := fmt.Fprintf(w, "%s checked against the %s: nothing found\n", counted(r.CRDs, "CRD"), r.Against)
		return err
	}
	header := []string{"SEVERITY", "CRD", "VERSION", "RULE", "PATH", "OBJECTS", "MESSAGE"}
	fleet := slices.ContainsFunc(r.Findings, func(f lifecycle.Finding) bool { return f.Cluster != "" })
	if fleet {
		header = append([]string{"CLUSTER"}, header...)
	}
	t := newTable(w, header...)
	for _, fd := range r.Findings {
		objects := fd.Object
		if fd.Count > 1 {
			objects = fmt.Sprintf("%d: %s", fd.Count, fd.Object)
		}
		row := []string{string(fd.Severity), fd.CRD, fd.Version, fd.Rule, fd.Path, objects, fd.Message}
		if fleet {
			row = append([]string{fd.Cluster}, row...)
		}
		if err := t.Append(row...); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, fb := range fixBlocks(r.Findings) {
		where := fb.crd
		if fb.cluster != "" {
			where = fb.cluster + ": " + where
		}
		if len(fb.versions) > 0 {
			where += " " + strings.Join(fb.versions, ", ")
		}
		if _, err := fmt.Fprintf(w, "\nfix %s (%s):\n", where, strings.Join(fb.rules, ", ")); err != nil {
			return err
		}
		for i, step := range fb.fix {
			if _, err := fmt.Fprintf(w, "  %d. %s\n", i+1, step); err != nil {
				return err
			}
		}
	}
	notes := ""
	if r.Notes > 0 {
		notes = ", " + counted(r.Notes, "note")
	}
	_, err := fmt.Fprintf(w, "\n%s checked against the %s: %s, %s%s\n", counted(r.CRDs, "CRD"), r.Against, counted(r.Errors, "error"), counted(r.Warnings, "warning"), notes)
	return err
}

// writeCheckMarkdown writes the release-note sections the Upjet policy
// asks for: deprecated APIs, breaking changes, upgrade steps.
func writeCheckMarkdown(w io.Writer, r CheckReport) error {
	var b strings.Builder
	b.WriteString("## Deprecated APIs\n\n")
	deprecated := 0
	for _, f := range r.Findings {
		if f.Kind == lifecycle.FindingDeprecation {
			if deprecated == 0 {
				b.WriteString("| CRD | version | change |\n|---|---|---|\n")
			}
			deprecated++
			fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", f.CRD, f.Version, mdCell(f.Message))
		}
	}
	if deprecated == 0 {
		b.WriteString("None.\n")
	}
	b.WriteString("\n## Breaking changes\n\n")
	breaking := 0
	for _, f := range r.Findings {
		// A refusal that depends on the cluster is breaking where it holds.
		if f.Kind == lifecycle.FindingDeprecation || (f.Severity != lifecycle.SeverityError && f.Kind != lifecycle.FindingRejected) {
			continue
		}
		breaking++
		where := "`" + f.CRD + "`"
		if f.Version != "" {
			where += " `" + f.Version + "`"
		}
		if f.Path != "" {
			where += " `" + f.Path + "`"
		}
		fmt.Fprintf(&b, "- %s: %s (%s)\n", where, f.Message, f.Rule)
	}
	if breaking == 0 {
		b.WriteString("None.\n")
	}
	b.WriteString("\n## Upgrade steps\n\n")
	fixes := fixBlocks(r.Findings)
	for _, fb := range fixes {
		where := "`" + fb.crd + "`"
		for _, v := range fb.versions {
			where += " `" + v + "`"
		}
		fmt.Fprintf(&b, "- %s (%s):\n", where, strings.Join(fb.rules, ", "))
		for i, s := range fb.fix {
			fmt.Fprintf(&b, "  %d. %s\n", i+1, s)
		}
	}
	if len(fixes) == 0 {
		b.WriteString("Apply the new CRDs.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fixBlock is the fix several findings of one CRD share: each is said
// once, under every rule and version that leads to it.
type fixBlock struct {
	cluster, crd    string
	versions, rules []string
	fix             []string
}

// fixBlocks are the findings' fixes, one per CRD (and cluster) and fix, in
// the order the findings first name them.
func fixBlocks(findings []lifecycle.Finding) []*fixBlock {
	var blocks []*fixBlock
	index := map[string]*fixBlock{}
	for _, f := range findings {
		if len(f.Fix) == 0 {
			continue
		}
		fix := make([]string, len(f.Fix))
		for i, a := range f.Fix {
			fix[i] = Advice(a)
		}
		key := strings.Join(append([]string{f.Cluster, f.CRD}, fix...), "\x00")
		fb, ok := index[key]
		if !ok {
			fb = &fixBlock{cluster: f.Cluster, crd: f.CRD, fix: fix}
			index[key] = fb
			blocks = append(blocks, fb)
		}
		if f.Version != "" && !slices.Contains(fb.versions, f.Version) {
			fb.versions = append(fb.versions, f.Version)
		}
		if !slices.Contains(fb.rules, f.Rule) {
			fb.rules = append(fb.rules, f.Rule)
		}
	}
	return blocks
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// counted is "1 error", "2 errors".
func counted(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// WriteWarnings prints each warning as kubectl does, one line each.
func WriteWarnings(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
}
