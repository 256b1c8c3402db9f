package check

import (
	"strings"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
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
		out = append(out, strings.Join(words, " "))
	}
	return strings.Join(out, "; ")
}

// A release that stores at an older version than the cluster (a
// downgrade, or another tool's step undone) is reached by switching
// storage back, checked on every object, never by moving storage forward.
func TestStoredVersionRemovedStepsBack(t *testing.T) {
	const w = "widgets.example.com"
	for _, tc := range []struct {
		name string
		live string
		want string
	}{
		{name: "the older version is served: switch back, migrate, apply", live: "v1alpha2:served,deprecated v1:served,storage",
			want: "rollback " + w + " v1 --switch-storage; migrate " + w + "; then apply this"},
		{name: "the older version is not served: serve it again first", live: "v1alpha2:deprecated v1:served,storage",
			want: "rollback " + w + " v1; rollback " + w + " v1 --switch-storage; migrate " + w + "; then apply this"},
		{name: "the live CRD lacks it: added from the manifest", live: "v1:served,storage",
			want: "promote " + w + " v1alpha2 --from-file NEW_MANIFEST; rollback " + w + " v1 --switch-storage; migrate " + w + "; then apply this"},
		{name: "a version between them: no step of the plugin, said why", live: "v1alpha2:served v1beta1:served v1:served,storage",
			want: "this release stores"},
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

// The managedFields entries of a removed version are dropped only once it
// is not served; the fix gets it there with the plugin's steps, from where
// the cluster is.
func TestEntriesFixOrder(t *testing.T) {
	const w = "widgets.example.com"
	for _, tc := range []struct {
		name, live, next string
		still            []string
		want             string
	}{
		{name: "an older version, the new storage not live yet", live: "v1alpha1:served,storage", next: "v1beta1:served,storage", still: []string{"v1alpha1"},
			want: "promote " + w + " v1beta1 --from-file NEW_MANIFEST; promote " + w + " v1beta1 --to bridge; promote " + w + " v1beta1 --to deprecated; migrate " + w + "; promote " + w + " v1beta1 --to blocked; migrate " + w + " --clean-managed-fields; then apply the"},
		{name: "an older version, storage switched and pruned, not deprecated", live: "v1alpha1:served v1beta1:served,storage", next: "v1beta1:served,storage", still: []string{"v1alpha1"},
			want: "promote " + w + " v1beta1 --to deprecated; promote " + w + " v1beta1 --to blocked; migrate " + w + " --clean-managed-fields; then apply the"},
		{name: "a newer version (a downgrade): switched back, then dropped right after the apply", live: "v1alpha2:served v1:served,storage", next: "v1alpha2:served,storage", still: []string{"v1"},
			want: "rollback " + w + " v1 --switch-storage; migrate " + w + "; then apply the; migrate " + w + " --clean-managed-fields"},
		{name: "an older version the release keeps: blocked would stop serving it too, so the apply comes first", live: "v1alpha1:served,deprecated v1beta1:served,deprecated v1:served,storage", next: "v1beta1:served,deprecated v1:served,storage", still: []string{"v1alpha1"},
			want: "then apply the; migrate " + w + " --clean-managed-fields"},
		{name: "a downgrade to a version the live CRD lacks: added, switched back", live: "v1:served,storage", next: "v1alpha2:served,storage", still: []string{"v1"},
			want: "promote " + w + " v1alpha2 --from-file NEW_MANIFEST; rollback " + w + " v1 --switch-storage; migrate " + w + "; then apply the; migrate " + w + " --clean-managed-fields"},
		{name: "no longer served: dropped, then applied", live: "v1alpha1 v1beta1:served,storage", next: "v1beta1:served,storage",
			want: "migrate " + w + " --clean-managed-fields; then apply the"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := []string{"v1beta1"}
			if tc.still != nil && tc.still[0] == "v1alpha1" && strings.Contains(tc.live, "v1alpha1:served,storage") {
				stored = []string{"v1alpha1"}
			}
			live := crd(stored, strings.Fields(tc.live)...)
			if got := commands(entriesFix(live, crd(nil, strings.Fields(tc.next)...), tc.still)); got != tc.want {
				t.Errorf("fix\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
