package stages

import (
	"strings"
	"testing"
)

// What status says of objects whose managedFields name a version the CRD
// does not serve, found by listing them: the problem, its severity, and
// the next step, which cleans the entries where nothing comes first.
func TestAssessStaleManagedFields(t *testing.T) {
	const name = "widgets.example.com"
	migrateClean := MigrateStep(name)
	migrateClean.CleanManagedFields = true
	removed := &StaleManagedFields{Objects: 5, First: []string{"ns/a", "ns/b", "ns/c"}, Removed: []string{"v1beta1"}}
	unserved := &StaleManagedFields{Objects: 1, First: []string{"ns/a"}, Unserved: []string{"v1beta1"}}
	both := &StaleManagedFields{Objects: 2, First: []string{"ns/a", "ns/b"}, Removed: []string{"v1alpha1"}, Unserved: []string{"v1beta1"}}
	for _, tc := range []struct {
		name     string
		crd      string // "removed", "blocked", "pending"
		stale    *StaleManagedFields
		severity Severity // of the problem; "" for none
		problem  string
		next     *Step
		reason   string
	}{
		{name: "none found: the lifecycle goes on", crd: "blocked", stale: nil,
			next: PromoteToStep(name, "v1", StageRemoved)},
		{name: "zero objects is none", crd: "blocked", stale: &StaleManagedFields{},
			next: PromoteToStep(name, "v1", StageRemoved)},
		{name: "after a removal: server-side apply fails now", crd: "removed", stale: removed,
			severity: SeverityError, problem: `5 objects (ns/a, ns/b, ns/c and 2 more) carry managedFields entries recorded at v1beta1, which the CRD no longer has: every server-side apply of them (kubectl apply --server-side, a GitOps sync, a controller's apply) fails with "request to convert CR to an invalid group/version"`,
			next: CleanManagedFieldsStep(name), reason: "drop the managedFields entries at v1beta1 (gone from spec.versions) from 5 objects"},
		{name: "before the removal: dropped first, not promoted to removed", crd: "blocked", stale: unserved,
			severity: SeverityWarning, problem: "1 object (ns/a) carries managedFields entries recorded at v1beta1, which is no longer served: once it is removed from spec.versions",
			next: CleanManagedFieldsStep(name), reason: "before removing it"},
		{name: "removed and unserved: the removal decides", crd: "blocked", stale: both,
			severity: SeverityError, problem: "recorded at v1alpha1, which the CRD no longer has", next: CleanManagedFieldsStep(name)},
		{name: "a migration pending drops them as it re-stores", crd: "pending", stale: unserved,
			severity: SeverityWarning, problem: "recorded at v1beta1", next: migrateClean, reason: "objects may still be stored at v1beta1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := map[string]func() Assessment{
				"removed": func() Assessment { return AssessWith(crd([]string{"v1"}, "v1:served,storage"), tc.stale) },
				"blocked": func() Assessment { return AssessWith(crd([]string{"v1"}, "v1:served,storage", "v1beta1:-"), tc.stale) },
				"pending": func() Assessment {
					return AssessWith(crd([]string{"v1beta1", "v1"}, "v1:served,storage", "v1beta1:-"), tc.stale)
				},
			}[tc.crd]()
			var got *Problem
			for i, p := range c.Problems {
				if strings.Contains(p.Message, "managedFields") {
					got = &c.Problems[i]
				}
			}
			switch {
			case tc.severity == "" && got != nil:
				t.Errorf("problem %+v, want none", got)
			case tc.severity != "" && (got == nil || got.Severity != tc.severity || !strings.Contains(got.Message, tc.problem)):
				t.Errorf("problem %+v, want %s containing %q", got, tc.severity, tc.problem)
			}
			if !sameStep(c.Next.Step, tc.next) || !strings.Contains(c.Next.Reason, tc.reason) {
				t.Errorf("next %+v (step %+v), want %+v, reason containing %q", c.Next, c.Next.Step, tc.next, tc.reason)
			}
			if tc.stale != nil && tc.stale.Objects > 0 && c.StaleManagedFields == nil {
				t.Error("the assessment does not carry what was found (-o json)")
			}
		})
	}
}

// Which CRDs status lists the objects of, and how the versions found
// are told apart.
func TestStaleManagedFieldsFromTheCRD(t *testing.T) {
	c := crd([]string{"v1"}, "v1:served,storage", "v1beta1:-", "v2:served")
	for gen, want := range map[int64]bool{0: true, 1: false, 2: true} {
		c.Generation = gen
		if got := MayHaveStaleManagedFields(c); got != want {
			t.Errorf("generation %d: MayHaveStaleManagedFields %v, want %v", gen, got, want)
		}
	}
	removed, unserved := StaleVersions(c, []string{"v1alpha1", "v1beta1", "v2", "v1alpha2"})
	if strings.Join(removed, ",") != "v1alpha2,v1alpha1" || strings.Join(unserved, ",") != "v1beta1" {
		t.Errorf("removed %v, unserved %v: want [v1alpha2 v1alpha1], [v1beta1]", removed, unserved)
	}
}
