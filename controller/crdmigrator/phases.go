package crdmigrator

import "slices"

// Phase is one named step of a migration; Options.Skip leaves any out.
type Phase string

const (
	// PhaseRestore writes every object back at the storage version, each
	// proven to survive old→new→old first.
	PhaseRestore Phase = "re-store"
	// PhasePrune writes status.storedVersions down to the storage version,
	// only after a re-store that proved every object.
	PhasePrune Phase = "prune"
	// PhaseManagedFields drops managedFields entries of versions no longer
	// served: server-side apply fails on them once the version is removed
	// (kubernetes#111937).
	PhaseManagedFields Phase = "managedFields cleanup"
)

// phases are the ones a Migrator runs.
type phases []Phase

func enabled(skip []Phase) phases {
	var p phases
	for _, ph := range []Phase{PhaseRestore, PhasePrune, PhaseManagedFields} {
		if !slices.Contains(skip, ph) {
			p = append(p, ph)
		}
	}
	return p
}

func (p phases) has(ph Phase) bool { return slices.Contains(p, ph) }
