package render

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// The objects left are listed with why, those needing attention first,
// folded after 20 with a count; objects of other groups only counted.
func TestConvertSummaryListsWhatIsLeft(t *testing.T) {
	r := &results.ConvertResult{To: "v1", Others: 4}
	for i := range 23 {
		r.NotConverted = append(r.NotConverted, results.NotConverted{Where: fmt.Sprintf("c.yaml:%d: document %d", i*10+1, i+1),
			Kind: "Composition", Name: fmt.Sprintf("fine-%d", i), Reason: results.AtTarget, Message: "at v1 already"})
	}
	r.NotConverted = append(r.NotConverted,
		results.NotConverted{Where: "c.yaml:500: document 24", Kind: "Composition", Name: "legacy", Reason: results.RejectedBySchema,
			Message: "compositions refuses it as it is, at v1", Errors: []string{"spec.resources: field not declared in schema"}},
		results.NotConverted{Where: "p.yaml:1: document 1", Kind: "AddressPool", Namespace: "metallb-system", Name: "pool", Reason: results.NoCRD,
			Message: "no CRD of kind AddressPool"})
	var out bytes.Buffer
	if err := WriteConvertSummary(&out, r); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	for _, want := range []string{
		"1 of kinds with no CRD given, in groups with others (a CRD the release drops): left as they were; 4 of other groups: left as they were",
		"c.yaml:500", "rejected: compositions refuses it as it is, at v1: spec.resources: field not declared in schema",
		"metallb-system/pool", "noCRD: no CRD of kind AddressPool",
		"and 5 more not converted (0 of them needing attention)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	// The count line, the header, 20 rows, the fold.
	if len(lines) != 23 || !strings.Contains(lines[2], "legacy") || !strings.Contains(lines[3], "pool") {
		t.Errorf("want the two needing attention first, 20 rows:\n%s", got)
	}
}
