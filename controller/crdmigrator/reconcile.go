package crdmigrator

import (
	"context"
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// outcome says when a CRD is looked at again.
type outcome int

const (
	// settled: on its next change. A refused object is settled too: the
	// same objects would be refused again until something changes.
	settled outcome = iota
	// retry: after a backoff that doubles with each failure in a row.
	retry
	// lookAgain: after Options.DeferFor, to see whether the cluster's
	// pending migration has started or ended.
	lookAgain
)

// reconcile decides what the CRD needs, says why, and runs it.
func (m *Migrator) reconcile(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) outcome {
	d := decide(crd, m.phases)
	poll := false
	if d.verb == doMigrate || d.verb == doClean {
		if why := m.clusterMigrationPending(ctx, crd); why != "" {
			d, poll = decision{verb: doDefer, reason: why}, true
		}
	}
	log := m.log.WithValues("crd", crd.Name, "generation", crd.Generation)
	log.V(1).Info("decided", "do", d.verb, "reason", d.reason)
	switch d.verb {
	case doDefer:
		m.deferEvent(crd, d.reason)
		if poll {
			return lookAgain
		}
		return settled
	case doClean:
		delete(m.deferred, crd.Name)
		return m.cleaned(ctx, crd, migrate.CleanManagedFields(ctx, m.clients, crd, m.opts.Migrate.Restore))
	case doMigrate:
		opts := m.opts.Migrate
		opts.KeepStoredVersions, opts.CleanManagedFields, opts.Force = !d.prune, d.clean, false
		// Migrate names the CRD in each line itself.
		opts.Log = m.log.WithValues("generation", crd.Generation)
		res, err := migrate.Migrate(ctx, m.clients, crd.Name, opts)
		return m.migrated(ctx, crd, d, res, err)
	}
	return settled
}

// clusterMigrationPending says why a StorageVersionMigration of the
// resource, created and not finished, defers the Migrator: until the
// cluster's controller takes it up, the CRD carries no StorageMigrating
// condition to tell. "" when there is none, or the list is not allowed
// (the condition is then what keeps the two apart).
func (m *Migrator) clusterMigrationPending(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) string {
	svm, err := migrate.ClusterMigration(ctx, m.clients, crd)
	if err != nil {
		m.log.Error(err, "could not list the cluster's StorageVersionMigrations: the StorageMigrating condition alone keeps the Migrator out of their way", "crd", crd.Name)
		return ""
	}
	if svm != nil && !svm.Done() {
		return fmt.Sprintf("the cluster's StorageVersionMigration %s of %s.%s is %s", svm.Name, crd.Spec.Names.Plural, crd.Spec.Group, svm.State)
	}
	return ""
}

// migrated reports a migration and says when to look again.
func (m *Migrator) migrated(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, d decision, res *results.Result, err error) outcome {
	log := m.log.WithValues("crd", crd.Name, "generation", crd.Generation)
	switch {
	case ctx.Err() != nil:
		log.Info("stopped: this replica is stopping or lost the lease; the next leader starts over")
		return settled
	case errors.Is(err, migrate.ErrClusterMigrating):
		m.deferEvent(crd, err.Error())
		log.Info("deferred", "reason", err.Error())
		return lookAgain
	}
	delete(m.deferred, crd.Name)
	if err != nil {
		countRun(crd.Name, "error")
		m.event(crd, warning, "MigrationFailed", "Migrate", err.Error()+"; nothing was pruned; trying again after a backoff")
		log.Error(err, "migration failed; trying again after a backoff")
		return retry
	}
	c := count(res)
	observe(crd.Name, c)
	r := summarize(res, c, d.prune)
	log.Info("migration ended", "result", r.result, "summary", r.what, "restored", c.restored, "refused", c.refused, "failed", c.failed, "prune", res.PruneReason, "storedVersions", res.StoredVersionsAfter)
	countRun(crd.Name, string(r.result))
	switch r.result {
	case resultDone:
		markSuccess(crd.Name)
		m.event(crd, normal, "Migrated", "Migrate", r.what)
		return settled
	case resultRefused:
		m.event(crd, warning, "ObjectsRefused", "Migrate", r.what)
		return settled
	}
	m.event(crd, warning, "MigrationIncomplete", "Migrate", r.what)
	return retry
}

// cleaned reports a managedFields cleanup on its own.
func (m *Migrator) cleaned(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, res *results.RestoreResult) outcome {
	log := m.log.WithValues("crd", crd.Name, "generation", crd.Generation)
	switch {
	case ctx.Err() != nil:
		log.Info("stopped: this replica is stopping or lost the lease; the next leader starts over")
		return settled
	case res.Complete():
		if !migrationPending(crd) {
			// Every object is proven at the storage version only where
			// storedVersions says so: a cleanup alone proves nothing of it.
			markSuccess(crd.Name)
		}
		log.Info("managedFields cleanup done", "cleaned", res.Rewritten, "listed", res.Listed)
		if res.Rewritten > 0 {
			m.event(crd, normal, "ManagedFieldsCleaned", "CleanManagedFields", fmt.Sprintf("dropped managedFields entries of versions no longer served from %d objects", res.Rewritten))
		}
		return settled
	case res.StopReason == results.StopNotProven:
		// Not proven for this CRD: the cleanup wrote nothing, and will
		// write nothing until the CRD changes.
		log.Info("managedFields cleanup wrote nothing", "reason", res.Stopped)
		return settled
	}
	failuresSeen(crd.Name, res.Failed)
	what := fmt.Sprintf("managedFields cleanup: %d of %d objects failed%s", res.Failed, res.Listed, firstFailure(res.Failures))
	if res.Stopped != "" {
		what += "; stopped: " + res.Stopped
	}
	what += "; trying again after a backoff"
	log.Info("managedFields cleanup incomplete", "summary", what)
	m.event(crd, warning, "ManagedFieldsCleanupFailed", "CleanManagedFields", what)
	return retry
}

// deferEvent records that the CRD is deferred, once for each reason in a
// row: the looks again while the cluster's migration runs say nothing new.
func (m *Migrator) deferEvent(crd *apiextensionsv1.CustomResourceDefinition, reason string) {
	if m.deferred[crd.Name] == reason {
		return
	}
	if m.deferred == nil {
		m.deferred = map[string]string{}
	}
	m.deferred[crd.Name] = reason
	m.event(crd, normal, "MigrationDeferred", "Defer", reason)
}
