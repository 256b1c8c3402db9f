package check

import (
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

func TestConsequence(t *testing.T) {
	schema := func(v string) Finding {
		return Finding{Severity: lifecycle.SeverityError, Kind: FindingSchema, CRD: "w", Version: v, Rule: "validationRuleAdded", Message: "rule added"}
	}
	objects := Finding{Severity: lifecycle.SeverityWarning, Kind: FindingObjects, CRD: "w", Version: "v2", Rule: "objectInvalid"}
	at := func(f Finding, path string) Finding { f.Path = path; return f }
	tls := at(objects, "spec.listeners[0].tls.mode, spec.labels[app]")
	skip := Finding{Severity: lifecycle.SeverityError, Kind: FindingLifecycle, CRD: "w", Version: "v1", Rule: "unservedWithoutDeprecation"}
	refused := Finding{Severity: lifecycle.SeverityError, Kind: FindingRejected, CRD: "w", Version: "v1", Rule: "storedVersionRemoved"}
	loss := Finding{Severity: lifecycle.SeverityError, Kind: FindingSchema, CRD: "w", Version: "v1", Rule: "storageSwitchMayLoseData"}
	for _, tc := range []struct {
		name      string
		in        []Finding
		validated map[string]int64
		policy    bool
		want      []lifecycle.Severity
		note      string
	}{
		{"a rule every live object passes is a note", []Finding{schema("v1")}, map[string]int64{"w/v1": 600}, false, []lifecycle.Severity{lifecycle.SeverityNote}, "rule added; all 600 live objects pass it"},
		{"no live object at all", []Finding{schema("v1")}, map[string]int64{"w/v1": 0}, false, []lifecycle.Severity{lifecycle.SeverityNote}, "rule added; there is no live object"},
		{"objects failing at that version: a warning beside them", []Finding{schema("v2"), objects}, map[string]int64{"w/v2": 10}, false, []lifecycle.Severity{lifecycle.SeverityWarning, lifecycle.SeverityWarning}, ""},
		{"objects failing elsewhere: a note all the same", []Finding{at(schema("v2"), "spec.replicas"), tls}, map[string]int64{"w/v2": 10}, false, []lifecycle.Severity{lifecycle.SeverityNote, lifecycle.SeverityWarning}, "rule added; all 10 live objects pass it"},
		{"objects failing inside the changed field: a warning", []Finding{at(schema("v2"), "spec.listeners[*]"), tls}, map[string]int64{"w/v2": 10}, false, []lifecycle.Severity{lifecycle.SeverityWarning, lifecycle.SeverityWarning}, ""},
		{"objects failing on a field the change is inside: a warning", []Finding{at(schema("v2"), "spec.listeners[*].tls.mode.x"), tls}, map[string]int64{"w/v2": 10}, false, []lifecycle.Severity{lifecycle.SeverityWarning, lifecycle.SeverityWarning}, ""},
		{"a map's values: a warning", []Finding{at(schema("v2"), "spec.labels.*"), tls}, map[string]int64{"w/v2": 10}, false, []lifecycle.Severity{lifecycle.SeverityWarning, lifecycle.SeverityWarning}, ""},
		{"a rule on the whole object: a warning", []Finding{at(schema("v2"), "(root)"), tls}, map[string]int64{"w/v2": 10}, false, []lifecycle.Severity{lifecycle.SeverityWarning, lifecycle.SeverityWarning}, ""},
		{"a prefix that is not a parent: a note", []Finding{at(schema("v2"), "spec.listener"), tls}, map[string]int64{"w/v2": 10}, false, []lifecycle.Severity{lifecycle.SeverityNote, lifecycle.SeverityWarning}, ""},
		{"objects not seen (files): a warning", []Finding{schema("v1")}, nil, false, []lifecycle.Severity{lifecycle.SeverityWarning}, ""},
		{"a release rule broken: a warning", []Finding{skip}, nil, false, []lifecycle.Severity{lifecycle.SeverityWarning}, ""},
		{"what the API server refuses stays an error", []Finding{refused}, nil, false, []lifecycle.Severity{lifecycle.SeverityError}, ""},
		{"a possible loss on re-store is a warning, never a note: migrate checks each object", []Finding{loss}, map[string]int64{"w/v1": 5}, false, []lifecycle.Severity{lifecycle.SeverityWarning}, ""},
		{"policy keeps the rules errors", []Finding{schema("v1"), skip}, map[string]int64{"w/v1": 600}, true, []lifecycle.Severity{lifecycle.SeverityError, lifecycle.SeverityError}, ""},
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
			if tc.in[0].Severity != lifecycle.SeverityError && tc.in[0].Kind == FindingSchema {
				t.Error("the input was changed")
			}
		})
	}
}
