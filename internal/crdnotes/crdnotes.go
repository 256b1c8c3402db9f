// Package crdnotes keeps what the plugin notes of a CRD on this machine: a
// JSON list per CRD, named by its UID, in a directory of kubectl's cache.
// Only this user's own runs write there and nothing goes to the cluster, so
// a note is a hint of what this machine saw, never a proof.
package crdnotes

import (
	"encoding/json"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Dir is a directory of notes of type T, keeping the newest Keep of each
// CRD ("" Path: none are kept).
type Dir[T any] struct {
	Path string
	Keep int
}

func (d Dir[T]) file(crd *apiextensionsv1.CustomResourceDefinition) string {
	if d.Path == "" || crd == nil || crd.UID == "" {
		return ""
	}
	return filepath.Join(d.Path, string(crd.UID)+".json")
}

// Load reads the CRD's notes. A file that cannot be read holds none: each
// caller reads no note as the cautious answer.
func (d Dir[T]) Load(crd *apiextensionsv1.CustomResourceDefinition) []T {
	f := d.file(crd)
	if f == "" {
		return nil
	}
	raw, err := os.ReadFile(f)
	if err != nil {
		return nil
	}
	var kept []T
	if json.Unmarshal(raw, &kept) != nil {
		return nil
	}
	return kept
}

// Store writes the CRD's newest notes whole (a rename, so a reader never
// sees half of a file). A file that cannot be written loses the notes, and
// a later run takes the cautious answer.
func (d Dir[T]) Store(crd *apiextensionsv1.CustomResourceDefinition, kept []T) {
	f := d.file(crd)
	if f == "" {
		return
	}
	if d.Keep > 0 && len(kept) > d.Keep {
		kept = kept[len(kept)-d.Keep:]
	}
	raw, err := json.Marshal(kept)
	if err != nil || os.MkdirAll(d.Path, 0o750) != nil {
		return
	}
	tmp, err := os.CreateTemp(d.Path, ".note-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(raw)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), f) != nil {
		_ = os.Remove(tmp.Name())
	}
}
