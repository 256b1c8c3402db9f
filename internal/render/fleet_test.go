package render

import (
	"bytes"
	"encoding/json"
	"testing"
)

// Each cluster's output ends up in the one document: a report as a
// report, anything else as text, nothing as nothing.
func TestWriteFleetKeepsEveryClustersOutput(t *testing.T) {
	runs := []ClusterRun{{Cluster: "a", Result: "done"}, {Cluster: "b", Result: "error"}, {Cluster: "c", Result: "not started"}}
	outputs := [][]byte{[]byte(`{"kind":"CustomResourceDefinition"}` + "\n"), []byte("refused: a table, not JSON\n"), nil}
	var out bytes.Buffer
	if err := WriteFleet(&out, FormatJSON, runs, outputs); err != nil {
		t.Fatal(err)
	}
	var doc FleetReport
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("not one document: %v\n%s", err, out.String())
	}
	if len(doc.Items) != 3 {
		t.Fatalf("%d items, want 3", len(doc.Items))
	}
	var report bytes.Buffer
	if a := doc.Items[0]; json.Compact(&report, a.Report) != nil || report.String() != `{"kind":"CustomResourceDefinition"}` || a.Output != "" {
		t.Errorf("a: report %s, output %q", a.Report, a.Output)
	}
	if b := doc.Items[1]; b.Report != nil || b.Output != "refused: a table, not JSON" {
		t.Errorf("b: report %s, output %q", b.Report, b.Output)
	}
	if c := doc.Items[2]; c.Report != nil || c.Output != "" {
		t.Errorf("c: report %s, output %q", c.Report, c.Output)
	}
}
