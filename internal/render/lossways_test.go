package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// A migrate that left objects for a loss prints runnable ways on from that
// state, each naming what it keeps or loses, and never the same migrate.
func TestALossSaysTheWaysOn(t *testing.T) {
	loss := func(name string) results.Loss {
		return results.Loss{Namespace: "default", Name: name, Version: "v1", Diffs: []results.FieldDiff{{Path: "spec.legacy", Before: `"keep"`, After: results.Absent}}}
	}
	left := results.Result{CRD: "endpoints.net.example.com", Storage: "v2", StoredVersions: []string{"v1", "v2"}, StoredVersionsAfter: []string{"v1", "v2"},
		Proofs:        []results.Proof{{Version: "v1", Storage: "v2", By: results.ProofObjects, CheckedAt: []string{"v1"}, Losses: []results.Loss{loss("ep-04"), loss("ep-01")}}},
		RestoreResult: results.RestoreResult{Rewritten: 4, Lost: 2}, PruneReason: results.PruneIncomplete, PruneSkipped: "not every object was re-stored"}
	for _, tc := range []struct {
		name        string
		served      bool
		want, never []string
	}{
		{"the old version served", false,
			[]string{
				"endpoints.net.example.com: 2 objects left at v1: re-storing them at v2 would lose spec.legacy. Ways on, each from here:",
				"  keep the fields: give v2, the storage version, spec.legacy in the schema of the CRD's manifest",
				"then run: kubectl crdversion migrate endpoints.net.example.com\n",
				"  accept the loss: kubectl crdversion migrate endpoints.net.example.com --accept-loss (re-stores every object unchecked: default/ep-01, default/ep-04 lose spec.legacy)",
				"  step back: kubectl crdversion rollback endpoints.net.example.com v2 --switch-storage (v1 is the storage version again",
			}, []string{"re-stores them anyway"}},
		// Served again only for the check: not a version to store at.
		{"the old version served again for the check", true,
			[]string{"--accept-loss (re-stores every object unchecked"}, []string{"step back"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := left
			if tc.served {
				r.ServedAgain = &results.ServedAgain{Versions: []string{"v1"}, Undone: true}
			}
			var out bytes.Buffer
			if err := WriteMigrate(&out, FormatTable, []*results.Result{&r}, false); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("want %q in:\n%s", w, out.String())
				}
			}
			for _, n := range tc.never {
				if strings.Contains(out.String(), n) {
					t.Errorf("want no %q in:\n%s", n, out.String())
				}
			}
		})
	}
	// Nothing lost, nothing said.
	var out bytes.Buffer
	clean := results.Result{CRD: "endpoints.net.example.com", Storage: "v2", Proofs: []results.Proof{{Version: "v1", Storage: "v2", By: results.ProofObjects}}}
	if err := WriteMigrate(&out, FormatTable, []*results.Result{&clean}, false); err != nil || strings.Contains(out.String(), "Ways on") {
		t.Errorf("%v: ways on without a loss:\n%s", err, out.String())
	}
}
