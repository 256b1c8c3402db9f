package migrate

import (
	"context"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// Migrate re-stores every object of a CRD at its storage version, each one
// checked as it is written unless the CRD proves old→new→old for all, then
// prunes status.storedVersions; where something is not proven it stops, with
// the reason in the result. An unserved old version the schemas do not prove
// kept is served again, deprecated, for the checks, and unserved after.
func Migrate(ctx context.Context, cs Clients, name string, opts Options) (*results.Result, error) {
	return migration.Migrate(ctx, cs.engine, name, opts.engine())
}

// Promote takes one lifecycle step of a CRD's version pair, with its checks:
// the bridge's round trip, the old→new→old check after a storage switch (and
// the switch back when it fails), the managedFields cleanup after removed.
func Promote(ctx context.Context, cs Clients, name string, opts PromoteOptions) (*results.PromoteResult, error) {
	return migration.Promote(ctx, cs.engine, name, opts.engine())
}

// Rollback takes one lifecycle step back, Promote's inverse.
func Rollback(ctx context.Context, cs Clients, name string, opts RollbackOptions) (*results.RollbackResult, error) {
	return migration.Rollback(ctx, cs.engine, name, opts.engine())
}

// CleanManagedFields moves or drops, on every object, managedFields entries
// at versions the CRD no longer serves: server-side apply fails on them once
// the version is removed. It writes only where the CRD proves that keeps every
// object; else the result's StopReason is StopNotProven and Migrate cleans.
func CleanManagedFields(ctx context.Context, cs Clients, crd *apiextensionsv1.CustomResourceDefinition, opts RestoreOptions) *results.RestoreResult {
	return migration.CleanManagedFields(ctx, cs.engine.Metadata, crd, opts.engine())
}

const (
	// DefaultSwitchTimeout is how long a call waits for a storage switch to show.
	DefaultSwitchTimeout = 2 * time.Minute
	// DefaultSwitchGrace is how long after a switch the prune waits for writes begun before it.
	DefaultSwitchGrace = 2 * time.Minute
	// NoSwitchGrace is a SwitchGrace of none: a caller that knows no write is in flight.
	NoSwitchGrace time.Duration = -1
)

// Errors a caller can branch on (errors.Is); results.ErrWebhookUnavailable too.
var (
	// ErrClusterMigrating: the cluster's own storage version migrator is at work on the CRD.
	ErrClusterMigrating = migration.ErrClusterMigrating
	// ErrStorageMigrating: the CRD reports StorageMigrating=True (an ErrClusterMigrating);
	// Options.Force goes ahead, but never over a cluster migration under way.
	ErrStorageMigrating = migration.ErrStorageMigrating
	// ErrSwitchNotInEffect: discovery did not show the new storage version in time; nothing was written.
	ErrSwitchNotInEffect = migration.ErrSwitchNotInEffect
	// ErrClientDryRun: DryRunClient sends nothing, so a pass or prune is refused.
	ErrClientDryRun = migration.ErrClientDryRun
	// ErrNotProven: old→new→old could be proven neither by the CRD nor object by object; nothing was written.
	ErrNotProven = migration.ErrNotProven
	// ErrChangedMeanwhile: the CRD moved to another stage while a step was planned; it was not written.
	ErrChangedMeanwhile = migration.ErrChangedMeanwhile
	// ErrKeepsChanging: other writers kept updating the CRD through every retry; nothing was written.
	ErrKeepsChanging = migration.ErrKeepsChanging
	// ErrInvalidDryRun: a DryRun none of none, client, server or ""; refused before anything is sent.
	ErrInvalidDryRun = migration.ErrInvalidDryRun
	// ErrNotBridgeable: an object did not survive new→storage→new; the bridge step was not
	// written (the losses in PromoteResult.Verify).
	ErrNotBridgeable = migration.ErrNotBridgeable
	// ErrSwitchedBack: re-storing at the new version would lose data; storage was switched
	// back (the losses in PromoteResult.Switch).
	ErrSwitchedBack = migration.ErrSwitchedBack
	// ErrManagedFieldsLeft: the version was removed, but some objects keep its managedFields
	// entries (PromoteResult.ManagedFields).
	ErrManagedFieldsLeft = migration.ErrManagedFieldsLeft
	// ErrServingNotInEffect: discovery did not show a step's change of serving in time; the step stays written.
	ErrServingNotInEffect = migration.ErrServingNotInEffect
	// ErrStillServed: a version served again for a migration's checks may still be served after it.
	ErrStillServed = migration.ErrStillServed
	// ErrRollbackUndone: storing at the old version would lose data; the step back was
	// undone (the losses in RollbackResult.Switch).
	ErrRollbackUndone = migration.ErrRollbackUndone
	// ErrWindowOpen: a stopped run left a step of its own open on the CRD, and this call may
	// not close it (a dry run).
	ErrWindowOpen = migration.ErrWindowOpen
)

// ClusterMigration is the newest of the cluster's StorageVersionMigrations
// (storagemigration.k8s.io/v1) of crd's resource, nil where there is none or
// the cluster does not serve them. One created and not yet taken up leaves no
// StorageMigrating condition on the CRD: a program that runs Migrate on its
// own waits for it to be Done.
func ClusterMigration(ctx context.Context, cs Clients, crd *apiextensionsv1.CustomResourceDefinition) (*results.ClusterMigration, error) {
	all, err := cluster.ListClusterMigrations(ctx, cs.engine.Migrations)
	if err != nil {
		return nil, err
	}
	return all.For(crd.Spec.Group, crd.Spec.Names.Plural), nil
}
