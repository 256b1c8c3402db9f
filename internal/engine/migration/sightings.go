package migration

import (
	"fmt"
	"slices"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/crdnotes"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
)

// Sightings remember when the plugin first saw each CRD generation with its
// storage version: the latest its switch can have happened, as a switch makes
// a new generation, whereas managedFields times and annotations are anyone's
// to write. A directory, written only by this user's runs, keeps them across runs.
type Sightings struct {
	notes crdnotes.Dir[sighting]
	mu    sync.Mutex
	seen  map[string]time.Time
}

// NewSightings keeps sightings in memory and, when dir is not "", in dir.
func NewSightings(dir string) *Sightings {
	return &Sightings{notes: crdnotes.Dir[sighting]{Path: dir, Keep: keptPerCRD}, seen: map[string]time.Time{}}
}

// processSightings are what this process has seen, for callers giving none.
var processSightings = NewSightings("")

type sighting struct {
	Generation int64     `json:"generation"`
	Storage    string    `json:"storage"`
	At         time.Time `json:"at"`
}

// keptPerCRD bounds a CRD's file: only the newest generations matter.
const keptPerCRD = 16

// Saw records crd as seen now, if new, and returns the latest moment its
// storage switch can have happened: when the first of the unbroken run of
// generations up to it with this storage version was seen (so serving or
// deprecating costs no new grace). An unseen generation breaks the run.
func (s *Sightings) Saw(crd *apiextensionsv1.CustomResourceDefinition) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	storage := stages.StorageVersion(crd)
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

// load reads the CRD's sightings; an unreadable file counts as never seen, so
// the grace is waited in full. A time in the future is no sighting.
func (s *Sightings) load(crd *apiextensionsv1.CustomResourceDefinition) []sighting {
	return slices.DeleteFunc(s.notes.Load(crd), func(k sighting) bool { return k.At.After(time.Now()) })
}
