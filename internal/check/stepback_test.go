package check

import (
	"strings"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// commands is a fix as the commands it runs, in order; a step without one
// is its text's first three words.
func commands(fix []lifecycle.Advice) string {
	var out []string
	for _, a := range fix {
		if a.Step == nil {
			out = append(out, strings.Join(strings.Fields(a.Text)[:3], " "))
			continue
		}
		s := a.Step
		words := []string{string(s.Op), s.CRD}
		if s.Version != "" {
			words = append(words, s.Version)
		}
		if s.To != "" {
			words = append(words, "--to", string(s.To))
		}
		if s.FromFile != "" {
			words = append(words, "--from-file", s.FromFile)
		}
		if s.SwitchStorage {
			words = append(words, "--switch-storage")
		}
		if s.CleanManagedFields {
			words = append(words, "--clean-managed-fields")
		}
		if len(s.CleanVersions) > 0 {
			words = append(words, "--clean-managed-fields-of="+strings.Join(s.CleanVersions, ","))
		}
		out = append(out, strings.Join(words, " "))
	}
	return strings.Join(out, "; ")
}

// A release that stores at an older version than the cluster (a
// downgrade, or another tool's step undone) is reached by switching
// storage back one version at a time, checked on every object, never by
// moving storage forward: the plan toward the release, offline too.
func TestStoredVersionRemovedStepsBack(t *testing.T) {
	const w = "widgets.example.com"
	for _, tc := range []struct {
		name string
		live string
		want string
	}{
		{name: "the older version is served: switch back, migrate, apply", live: "v1alpha2:served,deprecated v1:served,storage",
			want: "rollback " + w + " v1 --switch-storage; migrate " + w + "; then apply the"},
		{name: "the older version is not served: serve it again first", live: "v1alpha2:deprecated v1:served,storage",
			want: "rollback " + w + " v1; rollback " + w + " v1 --switch-storage; migrate " + w + "; then apply the"},
		{name: "the live CRD lacks it: added from the manifest", live: "v1:served,storage",
			want: "promote " + w + " v1alpha2 --from-file NEW_MANIFEST; rollback " + w + " v1 --switch-storage; migrate " + w + "; then apply the"},
		{name: "a version between them: one switch back at a time", live: "v1alpha2:served v1beta1:served v1:served,storage",
			want: "rollback " + w + " v1 --switch-storage; rollback " + w + " v1beta1 --switch-storage; migrate " + w + "; then apply the"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := crd([]string{"v1"}, strings.Fields(tc.live)...)
			fs := CheckUpgrade(live, crd(nil, "v1alpha2:served,storage"), []string{"v1"})
			if len(fs) == 0 || fs[0].Rule != "storedVersionRemoved" {
				t.Fatalf("findings %+v", fs)
			}
			if got := commands(fs[0].Fix); got != tc.want {
				t.Errorf("fix\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// Live objects' managedFields entries at a version the release removes: the finding's fix is the
// plan toward the release (stages.PlanUpgrade), the entries moved before the apply, served
// or not, from where the cluster is.
func TestEntriesFixIsThePlan(t *testing.T) {
	const w = "widgets.example.com"
	const apply = "then apply the"
	for _, tc := range []struct {
		name, live, next string
		stored, entries  []string
		want             string
	}{
		{name: "an older version, the new storage not live yet", live: "v1alpha1:served,storage", next: "v1beta1:served,storage", stored: []string{"v1alpha1"}, entries: []string{"v1alpha1"},
			want: "promote " + w + " v1beta1 --from-file NEW_MANIFEST; promote " + w + " v1beta1 --to bridge; promote " + w + " v1beta1 --to deprecated; migrate " + w + "; migrate " + w + " --clean-managed-fields --clean-managed-fields-of=v1alpha1; " + apply},
		{name: "an older version, storage switched and pruned", live: "v1alpha1:served v1beta1:served,storage", next: "v1beta1:served,storage", stored: []string{"v1beta1"}, entries: []string{"v1alpha1"},
			want: "migrate " + w + " --clean-managed-fields --clean-managed-fields-of=v1alpha1; " + apply},
		{name: "a newer version (a downgrade): switched back, moved before the apply", live: "v1alpha2:served v1:served,storage", next: "v1alpha2:served,storage", stored: []string{"v1alpha2", "v1"}, entries: []string{"v1"},
			want: "rollback " + w + " v1 --switch-storage; migrate " + w + "; migrate " + w + " --clean-managed-fields --clean-managed-fields-of=v1; " + apply},
		{name: "a downgrade to a version the live CRD lacks: added, switched back", live: "v1:served,storage", next: "v1alpha2:served,storage", stored: []string{"v1"}, entries: []string{"v1"},
			want: "promote " + w + " v1alpha2 --from-file NEW_MANIFEST; rollback " + w + " v1 --switch-storage; migrate " + w + "; migrate " + w + " --clean-managed-fields --clean-managed-fields-of=v1; " + apply},
		{name: "no longer served: moved while listed, then applied", live: "v1alpha1 v1beta1:served,storage", next: "v1beta1:served,storage", stored: []string{"v1beta1"}, entries: []string{"v1alpha1"},
			want: "migrate " + w + " --clean-managed-fields; " + apply},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := crd(tc.stored, strings.Fields(tc.live)...)
			found := planned([]results.Finding{{Rule: "managedFieldsOfRemovedVersion", Version: strings.Join(tc.entries, ", ")}}, live, crd(nil, strings.Fields(tc.next)...))
			if got := commands(found[0].Fix); got != tc.want {
				t.Errorf("fix\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
