package check

import (
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

func TestConsequence(t *testing.T) {
	schema := func(v string) results.Finding {
		return results.Finding{Severity: lifecycle.SeverityError, Kind: results.FindingSchema, CRD: "w", Version: v, Rule: "validationRuleAdded", Message: "rule added"}
	}
	objects := results.Finding{Severity: lifecycle.SeverityWarning, Kind: results.FindingObjects, CRD: "w", Version: "v2", Rule: "objectInvalid"}
	at := func(f results.Finding, path string) results.Finding { f.Path = path; return f }
	tls := at(objects, "spec.listeners[0].tls.mode, spec.labels[app]")
	skip := results.Finding{Severity: lifecycle.SeverityError, Kind: results.FindingLifecycle, CRD: "w", Version: "v1", Rule: "unservedWithoutDeprecation"}
	refused := results.Finding{Severity: lifecycle.SeverityError, Kind: results.FindingRejected, CRD: "w", Version: "v1", Rule: "storedVersionRemoved"}
	loss := results.Finding{Severity: lifecycle.SeverityError, Kind: results.FindingSchema, CRD: "w", Version: "v1", Rule: "storageSwitchMayLoseData"}
	for _, tc := range []struct {
		name      string
		in        []results.Finding
		validated map[string]int64
		policy    bool
		want      []lifecycle.Severity
		note      string
	}{
		{"a rule every live object passes is a note", []results.Finding{schema("v1")}, map[string]int64{"w/v1": 600}, false, []lifecycle.Severity{lifecycle.SeverityNote}, "rule added; all 600 live objects pass it"},
		{"no live object at all", []results.Finding{schema("v1")}, map[string]int64{"w/v1": 0}, false, []lifecycle.Severity{lifecycle.SeverityNote}, "rule added; there is no live object"},
		{"objects failing at that version: a warning beside them", []results.Finding{schema("v2"), objects}, map[string]int64{"w/v2": 10}, false, []lifecycle.Severity{lifecycle.SeverityWarning, lifecycle.SeverityWarning}, ""},
		{"objects failing elsewhere: a note all the same", []results.Finding{at(schema("v2"), "spec.replicas"), tls}, map[string]int64{"w/v2": 10}, false, []lifecycle.Severity{lifecycle.SeverityNote, lifecycle.SeverityWarning}, "rule added; all 10 live objects pass it"},
		{"objects failing inside the changed field: a warning", []results.Finding{at(schema("v2"), "spec.listeners[*]"), tls}, map[string]int64{"w/v2": 10}, false, []lifecycle.Severity{lifecycle.SeverityWarning, lifecycle.SeverityWarning}, ""},
		{"objects failing on a field the change is inside: a warning", []results.Finding{at(schema("v2"), "spec.listeners[*].tls.mode.x"), tls}, map[string]int64{"w/v2": 10}, false, []lifecycle.Severity{lifecycle.SeverityWarning, lifecycle.SeverityWarning}, ""},
		{"a map's values: a warning", []results.Finding{at(schema("v2"), "spec.labels.*"), tls}, map[string]int64{"w/v2": 10}, false, []lifecycle.Severity{lifecycle.SeverityWarning, lifecycle.SeverityWarning}, ""},
		{"a rule on the whole object: a warning", []results.Finding{at(schema("v2"), "(root)"), tls}, map[string]int64{"w/v2": 10}, false, []lifecycle.Severity{lifecycle.SeverityWarning, lifecycle.SeverityWarning}, ""},
		{"a prefix that is not a parent: a note", []results.Finding{at(schema("v2"), "spec.listener"), tls}, map[string]int64{"w/v2": 10}, false, []lifecycle.Severity{lifecycle.SeverityNote, lifecycle.SeverityWarning}, ""},
		{"objects not seen (files): a warning", []results.Finding{schema("v1")}, nil, false, []lifecycle.Severity{lifecycle.SeverityWarning}, ""},
		{"a release rule broken: a warning", []results.Finding{skip}, nil, false, []lifecycle.Severity{lifecycle.SeverityWarning}, ""},
		{"what the API server refuses stays an error", []results.Finding{refused}, nil, false, []lifecycle.Severity{lifecycle.SeverityError}, ""},
		{"a possible loss on re-store is a warning, never a note: migrate checks each object", []results.Finding{loss}, map[string]int64{"w/v1": 5}, false, []lifecycle.Severity{lifecycle.SeverityWarning}, ""},
		{"policy keeps the rules errors", []results.Finding{schema("v1"), skip}, map[string]int64{"w/v1": 600}, true, []lifecycle.Severity{lifecycle.SeverityError, lifecycle.SeverityError}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Consequence(tc.in, tc.validated, tc.policy)
			for i, f := range got {
				if f.Severity != tc.want[i] {
					t.Errorf("finding %d (%s): %s, want %s", i, f.Rule, f.Severity, tc.want[i])
				}
			}
			if tc.note != "" && got[0].Message != tc.note {
				t.Errorf("message %q, want %q", got[0].Message, tc.note)
			}
			if tc.in[0].Severity != lifecycle.SeverityError && tc.in[0].Kind == results.FindingSchema {
				t.Error("the input was changed")
			}
		})
	}
}
