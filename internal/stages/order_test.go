package stages

import (
	"slices"
	"testing"
)

func TestSortByPriorityDocsExample(t *testing.T) {
	// The ordering example from the Kubernetes CRD versioning docs.
	want := []string{"v10", "v2", "v1", "v11beta2", "v10beta3", "v3beta1", "v12alpha1", "v11alpha2", "foo1", "foo10"}
	got := slices.Clone(want)
	slices.Reverse(got)
	SortByPriority(got)
	if !slices.Equal(got, want) {
		t.Fatalf("SortByPriority = %v, want %v", got, want)
	}
}

func TestNewer(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"v1", "v1beta1", true},
		{"v1beta1", "v1", false},
		{"v1beta2", "v1beta1", true},
		{"v1beta1", "v1alpha9", true},
		{"v2alpha1", "v1", false},
		{"v1", "v1", false},
		{"v1alpha1", "custom", true},
	} {
		if got := Newer(tc.a, tc.b); got != tc.want {
			t.Errorf("Newer(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
