package migrate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// Sightings remember when the plugin first saw each CRD generation with its
// storage version. That moment is the latest its storage switch can have
// happened: a switch changes the spec, so it makes a new generation, and a
// generation is only ever seen after it was made. Nothing on the CRD itself
// shows the switch time that way: an update that changes no field keeps
// the managedFields times its client sent, so those can be set to any
// moment, and an annotation is plain JSON anyone with patch rights writes.
// What this process saw is kept in memory; with a directory, also in a
// file per CRD, so a later run (promote's switch, then migrate) need not
// wait out the switch grace again. Only this user's own runs write there.
type Sightings struct {
	dir  string
	mu   sync.Mutex
	seen map[string]time.Time
}

// NewSightings keeps sightings in memory and, when dir is not "", in dir.
func NewSightings(dir string) *Sightings {
	return &Sightings{dir: dir, seen: map[string]time.Time{}}
}

// processSightings are a migration's when the caller gives none: what this
// process has seen.
var processSightings = NewSightings("")

// sighting is one CRD generation seen with its storage version.
type sighting struct {
	Generation int64     `json:"generation"`
	Storage    string    `json:"storage"`
	At         time.Time `json:"at"`
}

// keptPerCRD bounds a CRD's file: only the newest generations matter.
const keptPerCRD = 16

// Saw records crd as seen now, unless its generation was seen before with
// the same storage version, and returns when it was first seen.
func (s *Sightings) Saw(crd *apiextensionsv1.CustomResourceDefinition) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	storage := lifecycle.StorageVersion(crd)
	key := fmt.Sprintf("%s/%d/%s", crd.UID, crd.Generation, storage)
	if at, ok := s.seen[key]; ok {
		return at
	}
	now := time.Now()
	kept := s.load(crd)
	at := now
	for _, k := range kept {
		if k.Generation == crd.Generation && k.Storage == storage && k.At.Before(at) {
			at = k.At
		}
	}
	s.seen[key] = at
	if at.Equal(now) {
		s.store(crd, append(kept, sighting{Generation: crd.Generation, Storage: storage, At: now}))
	}
	return at
}

func (s *Sightings) file(crd *apiextensionsv1.CustomResourceDefinition) string {
	if s.dir == "" || crd.UID == "" {
		return ""
	}
	return filepath.Join(s.dir, string(crd.UID)+".json")
}

// load reads the CRD's file. One that cannot be read counts as never seen:
// the grace is then waited out in full, never cut short.
func (s *Sightings) load(crd *apiextensionsv1.CustomResourceDefinition) []sighting {
	f := s.file(crd)
	if f == "" {
		return nil
	}
	raw, err := os.ReadFile(f)
	if err != nil {
		return nil
	}
	var kept []sighting
	if json.Unmarshal(raw, &kept) != nil {
		return nil
	}
	// A time in the future is no sighting.
	return slices.DeleteFunc(kept, func(k sighting) bool { return k.At.After(time.Now()) })
}

// store writes the CRD's file whole (a rename, so a reader never sees half
// of it). A file that cannot be written costs a later run a wait, no more.
func (s *Sightings) store(crd *apiextensionsv1.CustomResourceDefinition, kept []sighting) {
	f := s.file(crd)
	if f == "" {
		return
	}
	if len(kept) > keptPerCRD {
		kept = kept[len(kept)-keptPerCRD:]
	}
	raw, err := json.Marshal(kept)
	if err != nil || os.MkdirAll(s.dir, 0o750) != nil {
		return
	}
	tmp, err := os.CreateTemp(s.dir, ".sighting-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(raw)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), f) != nil {
		_ = os.Remove(tmp.Name())
	}
}
