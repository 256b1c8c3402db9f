package migrate

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWriteEffects(t *testing.T) {
	entry := metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "example.com/v1"}
	listed := metav1.ObjectMeta{Name: "w", Generation: 3, Labels: map[string]string{"a": "1", "b": "2"},
		Annotations: map[string]string{"x.example.com/y": "z"}, Finalizers: []string{"f"}, ManagedFields: []metav1.ManagedFieldsEntry{entry, entry}}
	for _, tc := range []struct {
		name string
		edit func(*metav1.ObjectMeta)
		want []string // substrings, one per effect; none for an unchanged object
	}{
		{"nothing changed", func(*metav1.ObjectMeta) {}, nil},
		{"resourceVersion and managedFields timestamps move", func(m *metav1.ObjectMeta) {
			m.ResourceVersion = "99"
			m.ManagedFields[0].Time = &metav1.Time{}
		}, nil},
		{"a label added, one changed, one removed", func(m *metav1.ObjectMeta) {
			m.Labels = map[string]string{"a": "9", "c": "3"}
		}, []string{"changed labels (~a -b +c)"}},
		{"an annotation added", func(m *metav1.ObjectMeta) { m.Annotations["policy"] = "set" }, []string{"changed annotations (+policy)"}},
		{"a finalizer added", func(m *metav1.ObjectMeta) { m.Finalizers = append(m.Finalizers, "g") }, []string{"changed finalizers [f] → [f g]"}},
		{"spec mutated", func(m *metav1.ObjectMeta) { m.Generation = 4 }, []string{"generation (3 → 4): mutating admission"}},
		{"managedFields dropped near the size limit", func(m *metav1.ObjectMeta) { m.ManagedFields = nil }, []string{"dropped managedFields (2 entries → 0)"}},
		{"one more managedFields entry is no loss", func(m *metav1.ObjectMeta) { m.ManagedFields = append(m.ManagedFields, entry) }, nil},
		{"several at once", func(m *metav1.ObjectMeta) { m.Generation, m.Finalizers = 5, nil }, []string{"generation", "finalizers"}},
	} {
		after := listed.DeepCopy()
		tc.edit(after)
		got := writeEffects(&listed, after, true, nil)
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %q, want %d effects", tc.name, got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: effect %d is %q, want it to say %q", tc.name, i, got[i], w)
			}
		}
	}
}

// A storage version that defaults a field the old version lacks: the
// re-store persists the default, and that is what moves the generation.
func TestWriteEffectsNamesPersistedDefaults(t *testing.T) {
	before, after := metav1.ObjectMeta{Generation: 1}, metav1.ObjectMeta{Generation: 2}
	got := writeEffects(&before, &after, true, []string{"spec.added"})
	if len(got) != 1 || !strings.Contains(got[0], "the storage version's defaults on fields the old version's schema does not default (spec.added) were persisted") || strings.Contains(got[0], "admission") {
		t.Errorf("got %q", got)
	}
}
