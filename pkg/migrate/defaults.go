package migrate

import (
	"errors"
	"fmt"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/verify"
)

// The zero value of every option is its default: an operator that imports
// the package gets what `kubectl crdversion migrate` does. A pass over
// objects has the defaults of every pass (verify's too).
const (
	// DefaultConcurrency bounds the requests a pass keeps in flight; the
	// pass adapts below it (see RestoreOptions.Concurrency).
	DefaultConcurrency = pass.DefaultConcurrency
	// MaxConcurrency bounds Concurrency: four times the default.
	MaxConcurrency = pass.MaxConcurrency
	// DefaultPageSize is objects listed per request, metadata only.
	DefaultPageSize = pass.DefaultPageSize
	// DefaultSwitchTimeout bounds the wait for a storage switch: an API
	// server sees a CRD update within seconds; minutes mean something is
	// wrong.
	DefaultSwitchTimeout = 2 * time.Minute
	// DefaultRetryFor bounds how long one write is retried while the server
	// is busy or restarting.
	DefaultRetryFor = pass.DefaultRetryFor
)

// Errors a caller can branch on (errors.Is) and put into a condition.
var (
	// ErrClusterMigrating: the cluster's own storage version migrator is
	// at work on the CRD.
	ErrClusterMigrating = errors.New("the cluster's storage version migrator is at work")
	// ErrStorageMigrating: the CRD reports StorageMigrating=True; it is an
	// ErrClusterMigrating, and Options.Force goes ahead (a migration of the
	// cluster's own that is under way is never forced).
	ErrStorageMigrating = fmt.Errorf("StorageMigrating=True: %w", ErrClusterMigrating)
	// ErrSwitchNotInEffect: discovery did not report the new storage
	// version within the timeout; nothing was written.
	ErrSwitchNotInEffect = errors.New("the storage version switch is not in effect")
	// ErrWebhookUnavailable: the conversion webhook did not answer;
	// nothing was written (verify.ErrWebhookUnavailable, the same error).
	ErrWebhookUnavailable = verify.ErrWebhookUnavailable
	// ErrClientDryRun: dry-run=client sends nothing, so a pass over
	// objects or a prune has nothing to show; refused.
	ErrClientDryRun = errors.New(`dry run "client" sends nothing: use "server"`)
	// ErrNotProven: a re-store that could not check each object as it
	// writes it, where the CRD does not prove old→new→old for every
	// object; nothing was written.
	ErrNotProven = errors.New("re-storing is not proven to lose nothing")
	// ErrChangedMeanwhile: the CRD moved to another stage while a step was
	// planned; the step was not written.
	ErrChangedMeanwhile = errors.New("the CRD changed while this step was planned")
)

func (o RestoreOptions) withDefaults() RestoreOptions {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	o.Concurrency = min(o.Concurrency, MaxConcurrency)
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.RetryFor <= 0 {
		o.RetryFor = DefaultRetryFor
	}
	if o.FieldManager == "" {
		o.FieldManager = FieldManager
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
