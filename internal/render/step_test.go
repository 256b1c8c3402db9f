package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// The spellings are what users copy and scripts run: each flag as the
// command line takes it.
func TestCommand(t *testing.T) {
	for _, tc := range []struct {
		step *lifecycle.Step
		want string
	}{
		{stages.PromoteStep("widgets.example.com", "v1"), "kubectl crdversion promote widgets.example.com v1"},
		{stages.PromoteToStep("widgets.example.com", "v1", lifecycle.StageBridge), "kubectl crdversion promote widgets.example.com v1 --to bridge"},
		{stages.IntroduceStep("widgets.example.com", "v2", "CRD_MANIFEST"), "kubectl crdversion promote widgets.example.com v2 --from-file CRD_MANIFEST"},
		{stages.PromoteFileStep("FILE"), "kubectl crdversion promote -f FILE"},
		{stages.MigrateStep("widgets.example.com"), "kubectl crdversion migrate widgets.example.com"},
		{stages.CleanManagedFieldsStep("widgets.example.com"), "kubectl crdversion migrate widgets.example.com --clean-managed-fields"},
		{stages.CheckFileStep("NEW"), "kubectl crdversion check -f NEW"},
	} {
		if got := Command(*tc.step); got != tc.want {
			t.Errorf("Command(%+v) = %q, want %q", *tc.step, got, tc.want)
		}
	}
	if got := Advice(lifecycle.Advice{Text: "then apply this manifest"}); got != "then apply this manifest" {
		t.Errorf("advice without a step = %q", got)
	}
	if got := Advice(lifecycle.Advice{Text: "re-store them", Step: stages.MigrateStep("widgets.example.com")}); got != "re-store them: kubectl crdversion migrate widgets.example.com" {
		t.Errorf("advice with a step = %q", got)
	}
}

// A check report's fixes carry their commands spelled out in the document,
// and in the table after their text.
func TestCheckFixCommands(t *testing.T) {
	fix := []lifecycle.Advice{{Text: "re-store every object", Step: stages.MigrateStep("widgets.example.com")}, {Text: "then apply this manifest"}}
	findings := []results.Finding{{Severity: lifecycle.SeverityError, Kind: results.FindingRejected, CRD: "widgets.example.com", Version: "v1alpha1", Rule: "storedVersionRemoved", Message: "refused", Fix: fix}}
	r := NewCheckReport("cluster", 1, findings)
	if findings[0].Fix[0].Command != "" {
		t.Error("the report changed the findings it was given")
	}
	var buf bytes.Buffer
	if err := WriteCheck(&buf, FormatJSON, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Findings []struct {
			Fix []map[string]any `json:"fix"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.String())
	}
	if got := doc.Findings[0].Fix; len(got) != 2 || got[0]["command"] != "kubectl crdversion migrate widgets.example.com" || got[0]["step"] == nil || got[1]["command"] != nil {
		t.Errorf("fix = %v", got)
	}
	buf.Reset()
	if err := WriteCheck(&buf, FormatTable, r); err != nil {
		t.Fatal(err)
	}
	if want := "  1. re-store every object: kubectl crdversion migrate widgets.example.com\n  2. then apply this manifest\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, buf.String())
	}
}
