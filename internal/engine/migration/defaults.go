package migration

import (
	"errors"
	"fmt"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/pass"
)

// DefaultSwitchTimeout bounds the wait for a storage switch: an API server
// sees a CRD update within seconds; minutes mean something is wrong.
const DefaultSwitchTimeout = 2 * time.Minute

// Errors a caller can branch on (errors.Is) and put into a condition.
var (
	// ErrClusterMigrating: the cluster's own storage version migrator is at work on the CRD.
	ErrClusterMigrating = errors.New("the cluster's storage version migrator is at work")
	// ErrStorageMigrating: the CRD reports StorageMigrating=True (an ErrClusterMigrating);
	// Options.Force goes ahead, but never over a cluster migration under way.
	ErrStorageMigrating = fmt.Errorf("StorageMigrating=True: %w", ErrClusterMigrating)
	// ErrSwitchNotInEffect: discovery did not report the new storage version
	// within the timeout; nothing was written.
	ErrSwitchNotInEffect = errors.New("the storage version switch is not in effect")
	// ErrClientDryRun: dry-run=client sends nothing, so a pass or prune is refused.
	ErrClientDryRun = errors.New(`dry run "client" sends nothing, so no pass over objects or prune can run`)
	// ErrNotProven: the CRD does not prove old→new→old for every object, and
	// the re-store could not check each object; nothing was written.
	ErrNotProven = errors.New("re-storing is not proven to lose nothing")
	// ErrChangedMeanwhile: the CRD moved to another stage while a step was
	// planned; the step was not written.
	ErrChangedMeanwhile = errors.New("the CRD changed while this step was planned")
)

func (o RestoreOptions) withDefaults() RestoreOptions {
	if o.Concurrency <= 0 {
		o.Concurrency = pass.DefaultConcurrency
	}
	o.Concurrency = min(o.Concurrency, pass.MaxConcurrency)
	if o.PageSize <= 0 {
		o.PageSize = pass.DefaultPageSize
	}
	if o.RetryFor <= 0 {
		o.RetryFor = pass.DefaultRetryFor
	}
	if o.FieldManager == "" {
		o.FieldManager = cluster.FieldManager
	}
	return o
}

func (o Options) withDefaults() Options {
	o.Restore = o.Restore.withDefaults()
	if o.SwitchTimeout <= 0 {
		o.SwitchTimeout = DefaultSwitchTimeout
	}
	return o
}
