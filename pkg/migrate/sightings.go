package migrate

import (
	"fmt"
	"slices"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/crdnotes"
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
	notes crdnotes.Dir[sighting]
	mu    sync.Mutex
	seen  map[string]time.Time
}

// NewSightings keeps sightings in memory and, when dir is not "", in dir.
func NewSightings(dir string) *Sightings {
	return &Sightings{notes: crdnotes.Dir[sighting]{Path: dir, Keep: keptPerCRD}, seen: map[string]time.Time{}}
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
// the same storage version, and returns the latest moment its storage
// switch can have happened: when this generation was first seen, or, where
// the generations just before it were seen with the same storage version,
// when the first of them was. A generation is one spec change (the API
// server adds one to it for each), so a generation seen with the storage
// version the one before it had was made by a change that did not switch
// storage: serving or deprecating a version does not cost the grace again.
// A generation not seen breaks the chain: two changes may switch and back.
func (s *Sightings) Saw(crd *apiextensionsv1.CustomResourceDefinition) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	storage := lifecycle.StorageVersion(crd)
	kept := s.load(crd)
	first := func(gen int64) (time.Time, bool) {
		at, ok := s.seen[sightingKey(crd, gen, storage)]
		for _, k := range kept {
			if k.Generation == gen && k.Storage == storage && (!ok || k.At.Before(at)) {
				at, ok = k.At, true
			}
		}
		return at, ok
	}
	now := time.Now()
	own, seen := first(crd.Generation)
	if !seen {
		own = now
		s.seen[sightingKey(crd, crd.Generation, storage)] = now
		s.notes.Store(crd, append(kept, sighting{Generation: crd.Generation, Storage: storage, At: now}))
	}
	at := own
	for gen := crd.Generation - 1; gen > 0; gen-- {
		t, ok := first(gen)
		if !ok {
			break
		}
		at = minTime(at, t)
	}
	return at
}

func sightingKey(crd *apiextensionsv1.CustomResourceDefinition, gen int64, storage string) string {
	return fmt.Sprintf("%s/%d/%s", crd.UID, gen, storage)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// load reads the CRD's sightings. A file that cannot be read counts as
// never seen: the grace is then waited out in full, never cut short.
func (s *Sightings) load(crd *apiextensionsv1.CustomResourceDefinition) []sighting {
	// A time in the future is no sighting.
	return slices.DeleteFunc(s.notes.Load(crd), func(k sighting) bool { return k.At.After(time.Now()) })
}
