package stages

import (
	"sort"

	"k8s.io/apimachinery/pkg/version"
)

// Newer reports whether a has higher Kubernetes version priority than b (v2 > v1 > v1beta2 >
// v1alpha1 > foo1): the order kubectl and discovery use, so listings agree with them.
func Newer(a, b string) bool {
	return version.CompareKubeAwareVersionStrings(a, b) > 0
}

// SortByPriority sorts version names in place, highest priority first.
func SortByPriority(names []string) {
	sort.SliceStable(names, func(i, j int) bool { return Newer(names[i], names[j]) })
}

// ByPriority compares version names for slices.SortFunc, higher priority first.
func ByPriority(a, b string) int {
	return -version.CompareKubeAwareVersionStrings(a, b)
}
