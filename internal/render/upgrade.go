package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// NewUpgradeReport spells out the commands of every step.
func NewUpgradeReport(plans []lifecycle.Upgrade, taken []string, dropped []results.Finding) UpgradeReport {
	r := UpgradeReport{APIVersion: APIVersion, Kind: "UpgradeReport", Done: true, Taken: taken}
	for _, f := range dropped {
		f.Fix = spelled(f.Fix)
		r.Dropped = append(r.Dropped, f)
		// What the owner would delete with its objects is not done, as check says.
		r.Done = r.Done && f.Severity != lifecycle.SeverityError
	}
	for _, u := range plans {
		u.Steps = append([]lifecycle.Waypoint{}, u.Steps...)
		for i, w := range u.Steps {
			u.Steps[i].Advice = spelled([]lifecycle.Advice{w.Advice})[0]
		}
		r.Done = r.Done && u.Done
		r.CRDs = append(r.CRDs, u)
	}
	return r
}

// phaseHeadings say when each phase's steps run, as the plan prints them.
var phaseHeadings = []struct {
	phase lifecycle.Phase
	text  string
}{
	{lifecycle.PhaseBefore, "before the apply (the plugin's steps; upgrade takes them)"},
	{lifecycle.PhaseApply, "the apply (the owner's, as it applies the release; upgrade stops here)"},
	{lifecycle.PhaseAfter, "after the apply (run upgrade again: it takes them)"},
}

// WriteUpgrade renders the plan: its steps by phase, numbered across the release (the owner's
// apply once for all the CRDs it shares), or the document, or markdown for a pull request.
func WriteUpgrade(w io.Writer, f Format, r UpgradeReport) error {
	if f.Document() {
		return writeDocument(w, f, r)
	}
	var b strings.Builder
	md := f == FormatMarkdown
	if md {
		b.WriteString("## Upgrade plan\n\n")
	}
	done := 0
	for _, u := range r.CRDs {
		if u.Done {
			done++
		}
	}
	writeDropped(&b, r.Dropped, md)
	if done == len(r.CRDs) {
		left := "nothing left to do"
		if !r.Done {
			left = "what the release drops (above) is left to decide"
		}
		fmt.Fprintf(&b, "%s of the release applied, every object at its storage version: %s\n", counted(len(r.CRDs), "CRD"), left)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "the way to the release: %s, %d done\n", counted(len(r.CRDs), "CRD"), done)
	n := 0
	for _, ph := range phaseHeadings {
		var lines []string
		seen := map[string]bool{}
		for _, u := range r.CRDs {
			for _, s := range u.Steps {
				if s.Phase != ph.phase {
					continue
				}
				line := upgradeLine(u.CRD, s, md)
				if seen[line] {
					continue // one apply of the release, however many CRDs it brings
				}
				seen[line] = true
				lines = append(lines, line)
			}
		}
		if len(lines) == 0 {
			continue
		}
		if md {
			fmt.Fprintf(&b, "\n### %s\n\n", upperFirst(ph.text))
		} else {
			fmt.Fprintf(&b, "\n%s:\n", ph.text)
		}
		for _, l := range lines {
			n++
			if md {
				fmt.Fprintf(&b, "%d. %s\n", n, l)
			} else {
				fmt.Fprintf(&b, "  %d. %s\n", n, l)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// upgradeLine is one step: the CRD and its words, then the command; a choice is marked.
func upgradeLine(crd string, s lifecycle.Waypoint, md bool) string {
	if s.Phase == lifecycle.PhaseApply {
		if md {
			return "apply the release: " + mdCell(s.Text)
		}
		return "apply the release: " + s.Text
	}
	text := s.Text
	if s.Decide {
		text = "DECIDE: " + text
	}
	switch {
	case md && s.Step != nil:
		return fmt.Sprintf("`%s`: %s: `%s`", crd, mdCell(text), Command(*s.Step))
	case md:
		return fmt.Sprintf("`%s`: %s", crd, mdCell(text))
	case s.Step != nil:
		return fmt.Sprintf("%s: %s: %s", crd, text, Command(*s.Step))
	}
	return fmt.Sprintf("%s: %s", crd, text)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// writeDropped says, before the plan, what the release's owner may delete: each CRD the release
// lacks, its objects and who deletes it, and the ways to keep them.
func writeDropped(b *strings.Builder, dropped []results.Finding, md bool) {
	for _, f := range dropped {
		line := fmt.Sprintf("%s: %s\n", strings.ToUpper(string(f.Severity)), f.Message)
		if md {
			line = fmt.Sprintf("> **%s**: %s\n", f.Severity, mdCell(f.Message))
		}
		b.WriteString(line)
		for _, a := range f.Fix {
			if md {
				fmt.Fprintf(b, ">  - %s\n", mdCell(Advice(a)))
			} else {
				fmt.Fprintf(b, "  - %s\n", Advice(a))
			}
		}
		b.WriteString("\n")
	}
}
