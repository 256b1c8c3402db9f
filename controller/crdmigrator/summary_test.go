package crdmigrator

import (
	"strings"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

func TestSummarize(t *testing.T) {
	pruned := &results.Result{Storage: "v1", StoredVersions: []string{"v1beta1", "v1"}, StoredVersionsAfter: []string{"v1"}, Pruned: true, PruneReason: results.PrunePruned,
		RestoreResult: results.RestoreResult{Rewritten: 8, Unchanged: 2}, Settle: &results.RestoreResult{Rewritten: 1}}
	refused := &results.Result{Storage: "v1", StoredVersionsAfter: []string{"v1beta1", "v1"}, PruneReason: results.PruneIncomplete, PruneSkipped: "not every object was re-stored",
		RestoreResult: results.RestoreResult{Rewritten: 5, Lost: 1},
		Proofs:        []results.Proof{{Version: "v1beta1", Losses: []results.Loss{{Namespace: "a", Name: "w-1", Version: "v1beta1", Diffs: []results.FieldDiff{{Path: "spec.legacy"}}}}}}}
	failed := &results.Result{Storage: "v1", StoredVersionsAfter: []string{"v1beta1", "v1"}, PruneReason: results.PruneIncomplete, PruneSkipped: "not every object was re-stored",
		RestoreResult: results.RestoreResult{Rewritten: 5, Lost: 1, Failed: 1, Failures: []results.Failure{{Namespace: "b", Name: "w-2", Code: 422, Reason: "Invalid", Message: "spec.size: must be positive"}}}}
	notPruned := &results.Result{Storage: "v1", StoredVersionsAfter: []string{"v1beta1", "v1"}, PruneReason: results.PruneStoredGained, PruneSkipped: "storedVersions gained v2"}
	for _, tc := range []struct {
		name  string
		res   *results.Result
		want  result
		c     counts
		words []string
	}{
		{"pruned", pruned, resultDone, counts{restored: 9}, []string{"9 objects re-stored at v1, 2 already there", "storedVersions [v1beta1 v1] → [v1]"}},
		// A refusal waits for the CRD's next change: the same check
		// refuses the same object.
		{"refused", refused, resultRefused, counts{restored: 5, refused: 1}, []string{"1 refused", "a/w-1 at v1beta1 loses spec.legacy", "not pruned: not every object was re-stored", "when the CRD changes"}},
		{"failed and refused", failed, resultIncomplete, counts{restored: 5, refused: 1, failed: 1}, []string{"1 failed (first: b/w-2, 422 Invalid: spec.size: must be positive)", "after a backoff"}},
		{"not pruned", notPruned, resultIncomplete, counts{}, []string{"not pruned: storedVersions gained v2", "after a backoff"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := count(tc.res)
			s := summarize(tc.res, c, true)
			if c != tc.c || s.result != tc.want {
				t.Errorf("counts %+v, result %s; want %+v, %s (%s)", c, s.result, tc.c, tc.want, s.what)
			}
			for _, w := range tc.words {
				if !strings.Contains(s.what, w) {
					t.Errorf("summary %q lacks %q", s.what, w)
				}
			}
		})
	}
}
