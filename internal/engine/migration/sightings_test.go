package migration

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
)

func sightedCRD(uid string, generation int64, storage string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.UID, crd.Generation = types.UID(uid), generation
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: storage, Storage: true, Served: true}}
	return crd
}

func TestSightingsKeepTheFirstSight(t *testing.T) {
	dir := t.TempDir()
	first := NewSightings(dir).Saw(sightedCRD("u1", 3, "v1"))

	// Another run on the same machine: the same generation was seen then.
	again := NewSightings(dir)
	if got := again.Saw(sightedCRD("u1", 3, "v1")); !got.Equal(first) {
		t.Errorf("a later run saw generation 3 at %s, want the first sight %s", got, first)
	}
	// The next generation with the same storage version was made by one
	// change that did not switch storage (served or deprecated flipped):
	// it counts from the first sight of the one before.
	if got := again.Saw(sightedCRD("u1", 4, "v1")); !got.Equal(first) {
		t.Errorf("generation 4, storage unchanged, counted from %s, want %s", got, first)
	}
	// A generation not seen breaks the chain: two changes may have
	// switched storage and back.
	six := again.Saw(sightedCRD("u1", 6, "v1"))
	if !six.After(first) {
		t.Errorf("generation 6 after 4 counted from %s, want after %s", six, first)
	}
	// A switch is a new sight, and so is what follows it.
	if got := again.Saw(sightedCRD("u1", 7, "v2")); !got.After(six) {
		t.Errorf("generation 7, a switch, counted from %s, want after %s", got, six)
	}
	if got := again.Saw(sightedCRD("u1", 8, "v1")); !got.After(six) {
		t.Errorf("generation 8, a switch back, counted from %s, want after %s", got, six)
	}
	// Memory alone: another process knows nothing.
	if got := NewSightings("").Saw(sightedCRD("u1", 3, "v1")); !got.After(first) {
		t.Errorf("a process without the directory saw generation 3 at %s", got)
	}
}

func TestSightingsNeverCutTheGraceOnABadFile(t *testing.T) {
	for _, tc := range []struct{ name, content string }{
		{"not JSON", "{"},
		{"a time in the future", `[{"generation":3,"storage":"v1","at":"2999-01-01T00:00:00Z"}]`},
		{"another storage version", `[{"generation":3,"storage":"v1beta1","at":"2020-01-01T00:00:00Z"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "u1.json"), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			before := time.Now()
			if got := NewSightings(dir).Saw(sightedCRD("u1", 3, "v1")); got.Before(before) {
				t.Errorf("counted from %s, before this run began (%s)", got, before)
			}
		})
	}
}
