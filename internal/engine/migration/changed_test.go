package migration

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
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
		got := writeEffects(&listed, after, true, defaultsSeen{})
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
// re-store persists the default, and that moves the generation. Shown to be
// the only change, it is no effect; not shown, it is one, with the reason.
func TestWriteEffectsOfPersistedDefaults(t *testing.T) {
	before, after := metav1.ObjectMeta{Generation: 1}, metav1.ObjectMeta{Generation: 2}
	filled := []results.FieldDiff{{Path: "spec.added", Before: results.Absent, After: `"on"`}}
	if got := writeEffects(&before, &after, true, defaultsSeen{fields: []string{"spec.added"}, filled: filled}); len(got) != 0 {
		t.Errorf("defaults alone: %q, want no effect", got)
	}
	got := writeEffects(&before, &after, true, defaultsSeen{fields: []string{"spec.added"}, other: "the write also changed spec.image"})
	if len(got) != 1 || !strings.Contains(got[0], "not shown to be the storage version's defaults (spec.added) alone: the write also changed spec.image") {
		t.Errorf("defaults and more: %q", got)
	}
	// The defaults explain the generation, not a label a policy adds.
	after.Labels = map[string]string{"policy": "set"}
	if got := writeEffects(&before, &after, true, defaultsSeen{fields: []string{"spec.added"}, filled: filled}); len(got) != 1 || !strings.Contains(got[0], "changed labels (+policy)") {
		t.Errorf("defaults and a label: %q", got)
	}
}

// What tells a generation moved by the storage version's defaults from one
// moved by mutating admission: the object read against the write's answer.
func TestFilledByDefaults(t *testing.T) {
	str := func(d string) apiextensionsv1.JSONSchemaProps {
		p := apiextensionsv1.JSONSchemaProps{Type: "string"}
		if d != "" {
			p.Default = &apiextensionsv1.JSON{Raw: []byte(d)}
		}
		return p
	}
	schemaWith := func(spec map[string]apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
		return &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: spec}}}
	}
	old := schemaWith(map[string]apiextensionsv1.JSONSchemaProps{"image": str("")})
	storage := schemaWith(map[string]apiextensionsv1.JSONSchemaProps{"image": str(""), "dataEngine": str(`"v1"`), "mode": str(`"rw"`)})
	obj := func(apiVersion string, spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": apiVersion, "kind": "BackingImage", "metadata": map[string]any{"name": "a", "generation": int64(1)}, "spec": spec}
	}
	read := obj("longhorn.io/v1beta1", map[string]any{"image": "x"})
	for _, tc := range []struct {
		name   string
		answer map[string]any
		filled []string // paths; nil: not shown to be defaults alone
		other  string
	}{
		{"the default filled in", obj("longhorn.io/v1beta2", map[string]any{"image": "x", "dataEngine": "v1", "mode": "rw"}), []string{"spec.dataEngine", "spec.mode"}, ""},
		{"admission changed a value", obj("longhorn.io/v1beta2", map[string]any{"image": "y", "dataEngine": "v1", "mode": "rw"}), nil, `spec.image "x" → "y"`},
		{"admission set a field to another value than its default", obj("longhorn.io/v1beta2", map[string]any{"image": "x", "dataEngine": "v2", "mode": "rw"}), nil, `spec.dataEngine <absent> → "v2"`},
		{"admission added a field no schema defaults", obj("longhorn.io/v1beta2", map[string]any{"image": "x", "dataEngine": "v1", "mode": "rw", "extra": "1"}), nil, "spec.extra"},
		{"nothing filled in, yet the generation moved", obj("longhorn.io/v1beta2", map[string]any{"image": "x"}), nil, "no default filled in"},
	} {
		filled, other := filledByDefaults(read, tc.answer, old, storage)
		var paths []string
		for _, f := range filled {
			paths = append(paths, f.Path)
		}
		if !slices.Equal(paths, tc.filled) || !strings.Contains(other, tc.other) || (tc.other == "") != (other == "") {
			t.Errorf("%s: filled %v, other %q; want %v, %q", tc.name, paths, other, tc.filled, tc.other)
		}
	}
}

// The fields written are counted by field, an object once however many of
// its list elements got the default.
func TestStorageDefaultsCountsByField(t *testing.T) {
	d := &storageDefaults{written: map[string]*results.DefaultWritten{}}
	d.count([]results.FieldDiff{{Path: "spec.dataEngine", After: `"v1"`}, {Path: "spec.disks[0].mode", After: `"rw"`}, {Path: "spec.disks[1].mode", After: `"rw"`}})
	d.count([]results.FieldDiff{{Path: "spec.dataEngine", After: `"v1"`}})
	want := []results.DefaultWritten{{Field: "spec.dataEngine", Default: `"v1"`, Objects: 2}, {Field: "spec.disks[*].mode", Default: `"rw"`, Objects: 1}}
	if got := d.counted(); !slices.Equal(got, want) {
		t.Errorf("%+v, want %+v", got, want)
	}
}
