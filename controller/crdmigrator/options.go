package crdmigrator

import (
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
)

// Options say which CRDs are the operator's and how their migrations run.
type Options struct {
	// CRDs names the operator's CRDs (widgets.example.com).
	CRDs []string
	// Selector picks the operator's CRDs by label, besides those named.
	Selector labels.Selector
	// Skip leaves phases out. Skipping the re-store skips the prune too:
	// nothing else proves what a prune makes permanent.
	Skip []Phase
	// Migrate tunes each migration (FieldManager, Gentle, SwitchGrace, ...);
	// its KeepStoredVersions, CleanManagedFields, Force and Log are the Migrator's own.
	Migrate migrate.Options
	// MinBackoff and MaxBackoff bound the wait before a failed migration
	// of a CRD is tried again, doubling from one to the other (0: 5s and
	// 5m).
	MinBackoff, MaxBackoff time.Duration
	// DeferFor is how long to wait before looking again at a CRD whose
	// resource a StorageVersionMigration is pending for (0: 30s); the end
	// of a StorageMigrating condition is seen at once.
	DeferFor time.Duration
	// Name names the Migrator in its log, its Events and its field
	// manager default ("": "crdversion-migrator").
	Name string
}

const (
	defaultMinBackoff = 5 * time.Second
	defaultMaxBackoff = 5 * time.Minute
	defaultDeferFor   = 30 * time.Second
	defaultName       = "crdversion-migrator"
)

func (o Options) withDefaults() Options {
	if o.MinBackoff <= 0 {
		o.MinBackoff = defaultMinBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = defaultMaxBackoff
	}
	if o.DeferFor <= 0 {
		o.DeferFor = defaultDeferFor
	}
	if o.Name == "" {
		o.Name = defaultName
	}
	if o.Migrate.Restore.FieldManager == "" {
		o.Migrate.Restore.FieldManager = o.Name
	}
	if o.Selector == nil {
		o.Selector = labels.Nothing()
	}
	return o
}
