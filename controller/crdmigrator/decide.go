package crdmigrator

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// verb is what a decision does with a CRD.
type verb string

const (
	// doNothing: no phase has anything to do.
	doNothing verb = "nothing"
	// doDefer: the cluster's own migrator is at work on the resource; it
	// prunes by itself when it succeeds, and two writers of one resource
	// would each prove nothing about the other's writes.
	doDefer verb = "defer"
	// doMigrate: the re-store, with the prune and the cleanup when enabled.
	doMigrate verb = "migrate"
	// doClean: the managedFields cleanup alone.
	doClean verb = "clean"
)

// decision is what the Migrator does with one CRD, and why, in words for
// the log and the Event.
type decision struct {
	verb   verb
	prune  bool
	clean  bool
	reason string
}

// decide reads the CRD as it is now. It never decides a prune without the
// re-store: only that pass proves what the prune makes permanent.
func decide(crd *apiextensionsv1.CustomResourceDefinition, p phases) decision {
	storage := storageVersion(crd)
	if c := storageMigrating(crd); c != nil {
		return decision{verb: doDefer, reason: fmt.Sprintf("the cluster's storage version migrator is at work on it (StorageMigrating=True, %s: %s)", c.Reason, c.Message)}
	}
	stored := fmt.Sprintf("status.storedVersions [%s]", strings.Join(crd.Status.StoredVersions, " "))
	if !migrationPending(crd) {
		if p.has(PhaseManagedFields) {
			return decision{verb: doClean, clean: true, reason: stored + " holds only the storage version " + storage + "; dropping managedFields entries of versions no longer served"}
		}
		return decision{verb: doNothing, reason: stored + " holds only the storage version " + storage + " and the managedFields cleanup is skipped"}
	}
	if !p.has(PhaseRestore) {
		d := decision{verb: doNothing, reason: stored + " names versions besides the storage version " + storage + ", but the re-store is skipped, and a prune without it would be unproven"}
		if p.has(PhaseManagedFields) {
			d.verb, d.clean = doClean, true
			d.reason += "; the managedFields cleanup runs where the CRD proves it"
		}
		return d
	}
	d := decision{verb: doMigrate, prune: p.has(PhasePrune), clean: p.has(PhaseManagedFields),
		reason: stored + " names versions besides the storage version " + storage + ": re-storing every object"}
	if !d.prune {
		d.reason += " (prune skipped)"
	}
	return d
}

func storageMigrating(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinitionCondition {
	i := slices.IndexFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
		return c.Type == apiextensionsv1.StorageMigrating && c.Status == apiextensionsv1.ConditionTrue
	})
	if i < 0 {
		return nil
	}
	return &crd.Status.Conditions[i]
}

// changed says whether an update of a CRD is one to act on, and why: a
// new generation (a storage switch, a version removed or no longer served)
// or the end of the cluster's own migration, which a decision deferred to.
func changed(old, cur *apiextensionsv1.CustomResourceDefinition) (bool, string) {
	switch {
	case storageVersion(old) != storageVersion(cur):
		return true, fmt.Sprintf("storage version %s → %s", storageVersion(old), storageVersion(cur))
	case old.Generation != cur.Generation:
		return true, fmt.Sprintf("generation %d → %d", old.Generation, cur.Generation)
	case storageMigrating(old) != nil && storageMigrating(cur) == nil:
		return true, "the cluster's storage version migrator is done with it"
	}
	return false, ""
}
