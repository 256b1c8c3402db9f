package render

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// NewCheckReport counts the findings and spells out the commands of their
// fixes.
func NewCheckReport(against string, crds int, findings []results.Finding) CheckReport {
	r := CheckReport{APIVersion: APIVersion, Kind: "CheckReport", Against: against, CRDs: crds, Findings: append([]results.Finding{}, findings...)}
	slices.SortStableFunc(r.Findings, func(a, b results.Finding) int { return decisive(a) - decisive(b) })
	for i, f := range r.Findings {
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

// decisive ranks a finding by how much it decides: errors (exit 3) first,
// then the storedVersions trap (an apply refused on every cluster that
// still names a removed version: an error there, a warning only because a
// file cannot tell), then the other warnings (exit 3 with --strict), then
// notes. The order within a rank is the check's.
func decisive(f results.Finding) int {
	switch {
	case f.Severity == lifecycle.SeverityError:
		return 0
	case f.Rule == "removedVersionMayBeStored":
		return 1
	case f.Severity == lifecycle.SeverityNote:
		return 3
	}
	return 2
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
	fleet := slices.ContainsFunc(r.Findings, func(f results.Finding) bool { return f.Cluster != "" })
	if fleet {
		header = append([]string{"CLUSTER"}, header...)
	}
	t := newTable(w, header...)
	t.width = r.Width
	for _, fd := range folded(r.Findings) {
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
		if f.Kind == results.FindingDeprecation {
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
		// A refusal that depends on the cluster is breaking where it holds,
		// and a schema change that refuses or drops what a client writes
		// breaks that client, whatever the live objects hold.
		if f.Kind == results.FindingDeprecation || (f.Severity != lifecycle.SeverityError && f.Kind != results.FindingRejected && !breaksClients(f)) {
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

// breaksClients says whether a schema change refuses, or drops, what a
// client of the version could write before: not a default changed, a rule
// removed, or a switch migrate checks.
func breaksClients(f results.Finding) bool {
	return f.Kind == results.FindingSchema && !slices.Contains([]string{"defaultChanged", "validationRuleRemoved", "storageSwitchMayLoseData"}, f.Rule)
}

// foldedNames is how many paths a folded row names before "and N more".
const foldedNames = 3

// folded makes one table row of the findings of one rule in one CRD (and
// cluster) and severity, which differ only in version, path or wording:
// 86 requiredAdded warnings are one row, with a count and the first paths.
// Findings about objects are grouped already; -o json keeps every finding.
func folded(findings []results.Finding) []results.Finding {
	type key struct {
		sev                lifecycle.Severity
		cluster, crd, rule string
		kind               results.FindingKind
	}
	index := map[key]int{}
	var out []results.Finding
	var paths [][]string
	for _, f := range findings {
		k := key{f.Severity, f.Cluster, f.CRD, f.Rule, f.Kind}
		i, ok := index[k]
		if !ok || f.Kind == results.FindingObjects {
			index[k] = len(out)
			out = append(out, f)
			paths = append(paths, []string{f.Path})
			continue
		}
		g := &out[i]
		if f.Version != "" && !slices.Contains(strings.Split(g.Version, ", "), f.Version) {
			g.Version = strings.TrimPrefix(g.Version+", "+f.Version, ", ")
		}
		paths[i] = append(paths[i], f.Path)
	}
	for i := range out {
		if n := len(paths[i]); n > 1 {
			shown := paths[i][:min(n, foldedNames)]
			out[i].Path = strings.Join(shown, ", ")
			if n > foldedNames {
				out[i].Path += fmt.Sprintf(", and %d more", n-foldedNames)
			}
			out[i].Message = fmt.Sprintf("%d alike, the first: %s", n, out[i].Message)
		}
	}
	return out
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
func fixBlocks(findings []results.Finding) []*fixBlock {
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
