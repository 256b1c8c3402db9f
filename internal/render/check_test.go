package render

import (
	"strings"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// One fix is said once per CRD, under every rule and version that leads to
// it; a different fix, or another CRD's, is a block of its own.
func TestCheckSaysEachFixOnce(t *testing.T) {
	migrate := []lifecycle.Advice{{Text: "re-store the objects first", Step: stages.MigrateStep("certificates.cert-manager.io")}}
	findings := []results.Finding{
		{Severity: lifecycle.SeverityError, CRD: "certificates.cert-manager.io", Version: "v1alpha2", Rule: "storedVersionDropped", Message: "a", Fix: migrate},
		{Severity: lifecycle.SeverityError, CRD: "certificates.cert-manager.io", Version: "v1alpha3", Rule: "storedVersionDropped", Message: "b", Fix: migrate},
		{Severity: lifecycle.SeverityError, CRD: "certificates.cert-manager.io", Version: "v1beta1", Rule: "removedWhileStored", Message: "c", Fix: migrate},
		{Severity: lifecycle.SeverityWarning, CRD: "certificates.cert-manager.io", Version: "v1", Rule: "fieldRemoved", Message: "d", Fix: []lifecycle.Advice{{Text: "keep the field"}}},
		{Severity: lifecycle.SeverityError, CRD: "issuers.cert-manager.io", Version: "v1alpha2", Rule: "storedVersionDropped", Message: "e", Fix: []lifecycle.Advice{{Text: "re-store the objects first", Step: stages.MigrateStep("issuers.cert-manager.io")}}},
	}
	var b strings.Builder
	if err := WriteCheck(&b, FormatTable, NewCheckReport("cluster", 2, findings)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"fix certificates.cert-manager.io v1alpha2, v1alpha3, v1beta1 (storedVersionDropped, removedWhileStored):\n  1. re-store the objects first: kubectl crdversion migrate certificates.cert-manager.io\n",
		"fix certificates.cert-manager.io v1 (fieldRemoved):\n  1. keep the field\n",
		"fix issuers.cert-manager.io v1alpha2 (storedVersionDropped):\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\nfix "); n != 3 {
		t.Errorf("%d fix blocks, want 3:\n%s", n, out)
	}
	b.Reset()
	if err := WriteCheck(&b, FormatMarkdown, NewCheckReport("cluster", 2, findings)); err != nil {
		t.Fatal(err)
	}
	if want := "- `certificates.cert-manager.io` `v1alpha2` `v1alpha3` `v1beta1` (storedVersionDropped, removedWhileStored):\n"; !strings.Contains(b.String(), want) {
		t.Errorf("the markdown lacks %q:\n%s", want, b.String())
	}
}

// What decides the exit code comes first: errors, then the storedVersions
// trap, then other warnings, then notes. Findings of one rule in one CRD
// are one row with a count and the first paths (-o json keeps each); a
// terminal's width cuts every line; markdown's breaking changes name the
// schema changes that break a client.
func TestCheckPutsWhatDecidesFirstAndFoldsTheRest(t *testing.T) {
	var findings []results.Finding
	for _, p := range []string{"spec.a", "spec.b", "spec.c", "spec.d", "spec.e"} {
		findings = append(findings, results.Finding{Severity: lifecycle.SeverityWarning, Kind: results.FindingSchema, CRD: "policies.kyverno.io", Version: "v1", Rule: "requiredAdded", Path: p, Message: p + " is required now"})
	}
	findings = append(findings,
		results.Finding{Severity: lifecycle.SeverityNote, Kind: results.FindingSchema, CRD: "policies.kyverno.io", Version: "v1", Rule: "defaultChanged", Path: "spec.x", Message: "default changed"},
		results.Finding{Severity: lifecycle.SeverityWarning, Kind: results.FindingRejected, CRD: "policies.kyverno.io", Version: "v1beta1", Rule: "removedVersionMayBeStored", Message: "v1beta1 is removed: " + strings.Repeat("long words ", 40)},
		results.Finding{Severity: lifecycle.SeverityError, Kind: results.FindingObjects, CRD: "policies.kyverno.io", Version: "v1", Rule: "managedFieldsOfRemovedVersion", Message: "server-side apply fails"})
	r := NewCheckReport("files", 1, findings)
	var rules []string
	for _, f := range r.Findings {
		rules = append(rules, f.Rule)
	}
	if got := strings.Join(rules, ","); got != "managedFieldsOfRemovedVersion,removedVersionMayBeStored,requiredAdded,requiredAdded,requiredAdded,requiredAdded,requiredAdded,defaultChanged" {
		t.Errorf("order %s", got)
	}
	r.Width = 160
	var b strings.Builder
	if err := WriteCheck(&b, FormatTable, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for line := range strings.Lines(out) {
		if n := len([]rune(strings.TrimRight(line, "\n"))); n > 160 {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
	if strings.Count(out, "requiredAdded") != 1 || !strings.Contains(out, "spec.a, spec.b, spec.c, and 2 more") || !strings.Contains(out, "5 alike, the first") {
		t.Errorf("the five requiredAdded are not one row with the first paths:\n%s", out)
	}
	b.Reset()
	if err := WriteCheck(&b, FormatMarkdown, r); err != nil {
		t.Fatal(err)
	}
	_, breaking, _ := strings.Cut(b.String(), "## Breaking changes")
	breaking, _, _ = strings.Cut(breaking, "## Upgrade steps")
	if !strings.Contains(breaking, "`spec.e`") || strings.Contains(breaking, "defaultChanged") {
		t.Errorf("breaking changes:\n%s", breaking)
	}
}
