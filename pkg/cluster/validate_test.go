package cluster

import (
	"fmt"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

func TestGroupObjects(t *testing.T) {
	missing := func(name string) lifecycle.Finding {
		return lifecycle.Finding{Severity: lifecycle.SeverityError, Kind: lifecycle.FindingObjects, CRD: "gadgets.example.com", Version: "v1",
			Rule: "objectRefused", Path: "spec.owner", Object: name, Message: "spec.owner: Required value"}
	}
	var found []lifecycle.Finding
	for i := range 500 {
		found = append(found, missing(fmt.Sprintf("ns/g-%03d", i)))
	}
	odd := missing("ns/odd")
	odd.Message, odd.Path = "spec.size: Unsupported value", "spec.size"
	found = append(found, odd)

	got := groupObjects(found)
	if len(got) != 2 {
		t.Fatalf("%d findings, want one per message: %+v", len(got), got)
	}
	if g := got[0]; g.Count != 500 || len(g.Objects) != 500 || g.Object != "ns/g-000, ns/g-001, ns/g-002, and 497 more" {
		t.Errorf("the group: count %d, %d names, %q", g.Count, len(g.Objects), g.Object)
	}
	if g := got[1]; g.Count != 1 || g.Object != "ns/odd" || g.Objects[0] != "ns/odd" {
		t.Errorf("the single one: %+v", g)
	}
}
