package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

func TestPassTime(t *testing.T) {
	for _, tc := range []struct {
		name           string
		duration, took time.Duration
		objects        int64
		want           string
	}{
		{"the pass is the migration", 4668 * time.Millisecond, 4500 * time.Millisecond, 3000, "4.668s, 667/s"},
		// The grace waited out and a second pass: 1,000 objects did not go at 92/s.
		{"waits around the pass", 10925 * time.Millisecond, 1250 * time.Millisecond, 1000, "10.925s in all; the pass 1.25s, 800/s"},
		{"a pass under a second has no rate", 10 * time.Second, 15 * time.Millisecond, 5, "10s"},
		{"no pass timed: the whole migration's rate", 3 * time.Second, 0, 600, "3s, 200/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &results.Result{Duration: tc.duration}
			r.Took, r.Rewritten = tc.took, tc.objects
			if got := passTime(r); got != tc.want {
				t.Errorf("passTime = %q, want %q", got, tc.want)
			}
		})
	}
}

// A step of the plugin's own that kept the owner's fields says so, with the
// way out: served again for a check, and switched back after one.
func TestFieldsKeptIsSaid(t *testing.T) {
	why := "the API server kept them the plugin's"
	var out bytes.Buffer
	r := &results.Result{CRD: "widgets.example.com", Storage: "v1", RestoreResult: results.RestoreResult{Listed: 3, Rewritten: 3, Took: time.Second},
		ServedAgain: &results.ServedAgain{Versions: []string{"v1alpha1"}, Undone: true, FieldsKept: why}}
	if err := WriteMigrate(&out, FormatTable, []*results.Result{r}, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), FieldsKept(why)) {
		t.Errorf("served again: the kept fields are not said:\n%s", out.String())
	}
	out.Reset()
	back := &results.SwitchCheck{Back: &results.StepResult{FieldsKept: why, Plan: &lifecycle.Plan{CRD: "widgets.example.com", Pair: lifecycle.Pair{Old: "v1alpha1", New: "v1"}, To: lifecycle.StageBridge}}}
	if err := WriteSwitchCheck(&out, "widgets.example.com", back); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), FieldsKept(why)) || !strings.Contains(out.String(), "--force-conflicts") {
		t.Errorf("switched back: the kept fields are not said:\n%s", out.String())
	}
}

// The library says why a migration stopped or did not prune; the report
// adds the way on, and none where running again would not help.
func TestAStopSaysTheWayOn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		r     results.Result
		want  string
		never string
	}{
		{"interrupted", results.Result{RestoreResult: results.RestoreResult{StopReason: results.StopInterrupted, Stopped: "interrupted"}}, "stopped: interrupted; run it again to go on", ""},
		{"following the cluster's migration, interrupted", results.Result{ClusterMigration: &results.ClusterMigration{Name: "widgets-v1"}, RestoreResult: results.RestoreResult{StopReason: results.StopInterrupted, Stopped: "interrupted while following the cluster's migration widgets-v1; it goes on in the cluster"}}, "it goes on in the cluster; follow it with kubectl get storageversionmigration widgets-v1", "run it again"},
		{"the cluster's migration failed", results.Result{RestoreResult: results.RestoreResult{StopReason: results.StopClusterFailed, Stopped: "failed"}}, "migrate without --via=cluster", ""},
		{"the webhook fails", results.Result{RestoreResult: results.RestoreResult{StopReason: results.StopConversionFailing, Stopped: "the conversion webhook is failing"}}, "once the webhook converts again, run it again", ""},
		{"a dry run sends nothing", results.Result{RestoreResult: results.RestoreResult{StopReason: results.StopClientDryRun, Stopped: "client dry run"}}, "stopped: client dry run\n", "run it again"},
		{"storedVersions gained a version", results.Result{PruneReason: results.PruneStoredGained, PruneSkipped: "storedVersions gained v2"}, "not pruned: storedVersions gained v2; run it again", ""},
		{"not asked", results.Result{PruneReason: results.PruneDisabled, PruneSkipped: "not asked to prune"}, "not pruned: not asked to prune\n", "again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			r.CRD, r.StoredVersionsAfter = "widgets.example.com", []string{"v1beta1", "v1"}
			var out bytes.Buffer
			if err := WriteMigrate(&out, FormatTable, []*results.Result{&r}, false); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.want) || tc.never != "" && strings.Contains(out.String(), tc.never) {
				t.Errorf("got %q, want %q and not %q", out.String(), tc.want, tc.never)
			}
		})
	}
}

// The defaults a re-store wrote are said after the pass, each with its value
// and how many objects got it, and not as a change to look at.
func TestWriteMigrateSaysTheDefaultsWritten(t *testing.T) {
	r := &results.Result{CRD: "backingimages.longhorn.io", Storage: "v1beta2", StoredVersions: []string{"v1beta1", "v1beta2"},
		StoredVersionsAfter: []string{"v1beta2"}, Pruned: true, PruneReason: results.PrunePruned, Proofs: []results.Proof{},
		DefaultsWritten: []results.DefaultWritten{{Field: "spec.dataEngine", Default: `"v1"`, Objects: 5}}}
	r.Listed, r.Rewritten, r.Failures = 5, 5, []results.Failure{}
	var out bytes.Buffer
	if err := WriteMigrate(&out, "", []*results.Result{r}, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `v1beta2's defaults written: spec.dataEngine="v1" into 5 objects; those objects' generation moved by the defaults alone, no value lost`) {
		t.Errorf("got:\n%s", out.String())
	}
	if strings.Contains(out.String(), "changed by") {
		t.Errorf("the defaults are not a change to look at:\n%s", out.String())
	}
	if r.NeedsAttention(true) {
		t.Error("a migration whose only change was the storage version's defaults needs attention")
	}
}
