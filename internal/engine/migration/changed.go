package migration

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// changedByWrite is the error of a write that was accepted but changed the
// object: what it changed.
type changedByWrite []string

func (c changedByWrite) Error() string {
	return "the write was meant to change nothing but " + strings.Join(c, "; ")
}

// writeEffects compares an object's metadata as listed with the answer to a
// write meant to change nothing: it sees mutating admission (labels,
// annotations, finalizers, a generation moved) and managedFields dropped as
// too large, not a change that keeps the generation. Labels and annotations
// count only where before was read at after's version. A generation moved
// only by the storage version's defaults (seen.filled) is no effect: the
// notice said it before the write, and the result counts it.
func writeEffects(before, after *metav1.ObjectMeta, labels bool, seen defaultsSeen) []string {
	var out []string
	if before.Generation != after.Generation && len(seen.filled) == 0 {
		why := "mutating admission changed the spec"
		if len(seen.fields) > 0 {
			why = fmt.Sprintf("not shown to be the storage version's defaults (%s) alone: %s; mutating admission may have changed the spec", strings.Join(seen.fields, ", "), seen.other)
		}
		out = append(out, fmt.Sprintf("changed its generation (%d → %d): %s", before.Generation, after.Generation, why))
	}
	if d := mapChanges(before.Labels, after.Labels); labels && d != "" {
		out = append(out, "changed labels "+d)
	}
	if d := mapChanges(before.Annotations, after.Annotations); labels && d != "" {
		out = append(out, "changed annotations "+d)
	}
	if !slices.Equal(before.Finalizers, after.Finalizers) {
		out = append(out, fmt.Sprintf("changed finalizers %v → %v", before.Finalizers, after.Finalizers))
	}
	if len(after.ManagedFields) < len(before.ManagedFields) {
		out = append(out, fmt.Sprintf("dropped managedFields (%d entries → %d): the API server does so when the object re-encoded with them is too large", len(before.ManagedFields), len(after.ManagedFields)))
	}
	return out
}

func mapChanges(a, b map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if v, ok := b[k]; !ok {
			parts = append(parts, "-"+k)
		} else if v != a[k] {
			parts = append(parts, "~"+k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			parts = append(parts, "+"+k)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "(" + strings.Join(parts, " ") + ")"
}
