package migrate

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
// write that should have changed nothing. What it can see: mutating
// admission changing labels, annotations or finalizers, or the spec (the
// generation moves); and the API server dropping managedFields, which it
// does silently when the re-encoded object is too large with them. What it
// cannot see: a change to spec or status that leaves the generation alone
// (status through a CRD without the status subresource's split, say).
// Labels and annotations are compared only when before was read at the
// version after is (a conversion may change them between versions).
// defaults are the fields the storage version's schema defaults where an
// old version's lacks a default: a spec that moves by them is the storage
// version's defaulting, which any write persists, not admission.
func writeEffects(before, after *metav1.ObjectMeta, labels bool, defaults []string) []string {
	var out []string
	if before.Generation != after.Generation {
		why := "mutating admission changed the spec"
		if len(defaults) > 0 {
			why = fmt.Sprintf("the storage version's defaults on fields the old version's schema does not default (%s) were persisted, as any write persists them; every read showed them already", strings.Join(defaults, ", "))
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

// mapChanges names the keys added, removed or changed, or "".
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
