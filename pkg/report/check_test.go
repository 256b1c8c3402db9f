package report

import (
	"strings"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// One fix is said once per CRD, under every rule and version that leads to
// it; a different fix, or another CRD's, is a block of its own.
func TestCheckSaysEachFixOnce(t *testing.T) {
	migrate := []lifecycle.Advice{{Text: "re-store the objects first", Step: lifecycle.Migrate("certificates.cert-manager.io")}}
	findings := []lifecycle.Finding{
		{Severity: lifecycle.SeverityError, CRD: "certificates.cert-manager.io", Version: "v1alpha2", Rule: "storedVersionDropped", Message: "a", Fix: migrate},
		{Severity: lifecycle.SeverityError, CRD: "certificates.cert-manager.io", Version: "v1alpha3", Rule: "storedVersionDropped", Message: "b", Fix: migrate},
		{Severity: lifecycle.SeverityError, CRD: "certificates.cert-manager.io", Version: "v1beta1", Rule: "removedWhileStored", Message: "c", Fix: migrate},
		{Severity: lifecycle.SeverityWarning, CRD: "certificates.cert-manager.io", Version: "v1", Rule: "fieldRemoved", Message: "d", Fix: []lifecycle.Advice{{Text: "keep the field"}}},
		{Severity: lifecycle.SeverityError, CRD: "issuers.cert-manager.io", Version: "v1alpha2", Rule: "storedVersionDropped", Message: "e", Fix: []lifecycle.Advice{{Text: "re-store the objects first", Step: lifecycle.Migrate("issuers.cert-manager.io")}}},
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
