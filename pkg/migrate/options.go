package migrate

import (
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// Options tune a migration. The zero value is what kubectl crdversion
// migrate does: every object re-stored, each proven first, and
// storedVersions pruned once every object is.
type Options struct {
	// Restore tunes the passes over objects.
	Restore RestoreOptions
	// KeepStoredVersions never prunes status.storedVersions (--prune=false).
	KeepStoredVersions bool
	// Force goes ahead while the cluster's migrator reports StorageMigrating=True.
	Force bool
	// SwitchTimeout bounds the wait for the storage switch (0: DefaultSwitchTimeout).
	SwitchTimeout time.Duration
	// CleanManagedFields drops managedFields entries of unserved versions.
	CleanManagedFields bool
	// CleanVersions are served versions whose entries are cleaned too (implies
	// CleanManagedFields): those a release removes, whose entries break
	// server-side apply once it lands.
	CleanVersions []string
	// AcceptLoss re-stores objects at an old version without proof of old→new→old.
	AcceptLoss bool
	// SwitchGrace is how long after the switch a write begun before it may land at
	// the old version; the prune waits it out (0: DefaultSwitchGrace; NoSwitchGrace: none).
	SwitchGrace time.Duration
	// Sightings date the storage switch (nil: what this process has seen).
	Sightings *Sightings
	// Notify, when set, hears what the migration waits for, in words for a person.
	Notify func(string)
	// Log hears each phase as it ends, with its reason (zero Logger: discarded).
	Log logr.Logger
}

// RestoreOptions tune the passes over objects.
type RestoreOptions struct {
	// Concurrency bounds the requests in flight (0: 256; at most 1024); below
	// it the pass grows while throughput grows and backs off on 429s.
	Concurrency int
	// Gentle paces the writes, from 20 a second, keeping the server's tail latency
	// near what it is at the slowest pace.
	Gentle bool
	// PageSize is objects listed per request (0: 500).
	PageSize int64
	// DryRun "server" sends every write with dryRun=All; "client" is refused.
	DryRun DryRun
	// FieldManager names the writes in managedFields (default "kubectl-crdversion").
	FieldManager string
	// Progress, when set, hears the estimated total and each object done; it must
	// be safe for concurrent calls.
	Progress func(done, total int64)
	// OnFailure, when set, hears every failure, one call at a time from many
	// goroutines; the result keeps the first 1000.
	OnFailure func(results.Failure)
	// RetryFor bounds the retries of one write while the server is busy or
	// unreachable (0: 30 s); past it the run stops.
	RetryFor time.Duration
}

// PromoteOptions say which step Promote takes, and how.
type PromoteOptions struct {
	// Version is the version taking over; "" for the one in flight.
	Version string
	// To is the stage to move to; "" for the next one, and only that is allowed.
	To lifecycle.Stage
	// Manifest holds the new version's schema, for introduced.
	Manifest *apiextensionsv1.CustomResourceDefinition
	// ConversionFromFile takes Manifest's conversion too (a live caBundle it lacks is kept).
	ConversionFromFile bool
	// DeprecationWarning is told to clients of the old version ("" for the default).
	DeprecationWarning string
	// DryRun, Concurrency and PageSize are RestoreOptions' for the passes around the step.
	DryRun      DryRun
	Concurrency int
	PageSize    int64
	// SwitchTimeout bounds the wait for a switch or its undo (0: DefaultSwitchTimeout).
	SwitchTimeout time.Duration
	// Progress hears each pass over objects: its task and the count done of total.
	Progress func(task string, done, total int64)
	// DespiteClients names the clients (field managers, audit log users or
	// NAMESPACE/NAME of a ServiceAccount, "requests") the step to blocked may
	// stop serving; any other still using the version refuses it.
	DespiteClients []string
	// AuditLogs are the API server's audit logs (files, folders of rotated
	// files, gzip'd or not) the step to blocked reads instead of the
	// deprecated-API metric: each user but this plugin that requested the
	// version after the prune of storedVersions refuses it by name; a log that
	// cannot show those requests refuses it as "requests".
	AuditLogs []string
	// AuditLogRead, if set, hears what each read of AuditLogs covered and
	// read only in part.
	AuditLogRead func(read results.AuditLogRead, warnings []string)
}

// RollbackOptions say which step Rollback takes back, and how.
type RollbackOptions struct {
	// Version is the version whose pair steps back; "" for the one in flight.
	Version string
	// SwitchStorage switches storage back even where no step switched it away.
	SwitchStorage bool
	// AcceptLoss keeps a switch back whose check finds objects losing fields: the check still
	// runs on every object and names each loss (RollbackResult.Switch), and the loss is recorded
	// on the CRD so the re-store after it takes the same loss without asking again.
	AcceptLoss bool
	// DryRun, Concurrency and PageSize are RestoreOptions' for the check after a switch back.
	DryRun      DryRun
	Concurrency int
	PageSize    int64
	// SwitchTimeout bounds the wait for a switch back or its undo (0: DefaultSwitchTimeout).
	SwitchTimeout time.Duration
	// Progress hears the check after a switch back: its task and the count done.
	Progress func(task string, done, total int64)
}

// DryRun is kubectl's --dry-run: none, client (nothing sent) or server (sent
// with dryRun=All: validated and admitted, never persisted).
type DryRun string

const (
	DryRunNone   DryRun = "none"
	DryRunClient DryRun = "client"
	DryRunServer DryRun = "server"
)

// Sightings remember when each CRD generation was first seen with its storage
// version: the latest its switch can have happened. A directory, written only
// by this program, keeps them across restarts.
type Sightings struct{ engine *migration.Sightings }

// NewSightings keeps sightings in dir ("": in memory only).
func NewSightings(dir string) *Sightings { return &Sightings{engine: migration.NewSightings(dir)} }

func (o RestoreOptions) engine() migration.RestoreOptions {
	return migration.RestoreOptions{
		Concurrency: o.Concurrency, Gentle: o.Gentle, PageSize: o.PageSize, DryRun: migration.DryRun(o.DryRun),
		FieldManager: o.FieldManager, Progress: o.Progress, OnFailure: o.OnFailure, RetryFor: o.RetryFor,
	}
}

func (o Options) engine() migration.Options {
	e := migration.Options{
		Restore: o.Restore.engine(), KeepStoredVersions: o.KeepStoredVersions, Force: o.Force,
		SwitchTimeout: o.SwitchTimeout, CleanManagedFields: o.CleanManagedFields, CleanVersions: o.CleanVersions,
		AcceptLoss: o.AcceptLoss, SwitchGrace: o.SwitchGrace, Notify: o.Notify, Log: o.Log,
	}
	if o.Sightings != nil {
		e.Sightings = o.Sightings.engine
	}
	return e
}

func (o PromoteOptions) engine() migration.PromoteOptions {
	return migration.PromoteOptions{
		Version: o.Version, To: o.To, Manifest: o.Manifest, ConversionFromFile: o.ConversionFromFile,
		DeprecationWarning: o.DeprecationWarning, DryRun: migration.DryRun(o.DryRun), Concurrency: o.Concurrency,
		PageSize: o.PageSize, SwitchTimeout: o.SwitchTimeout, Progress: o.Progress,
		DespiteClients: o.DespiteClients, AuditLogs: o.AuditLogs, AuditLogRead: o.AuditLogRead,
	}
}

func (o RollbackOptions) engine() migration.RollbackOptions {
	return migration.RollbackOptions{
		Version: o.Version, SwitchStorage: o.SwitchStorage, AcceptLoss: o.AcceptLoss, DryRun: migration.DryRun(o.DryRun),
		Concurrency: o.Concurrency, PageSize: o.PageSize, SwitchTimeout: o.SwitchTimeout, Progress: o.Progress,
	}
}

// Saw records crd as seen now, if new, and returns the latest moment its
// storage switch can have happened: when the first of the unbroken run of
// generations up to it with this storage version was seen.
func (s *Sightings) Saw(crd *apiextensionsv1.CustomResourceDefinition) time.Time {
	return s.engine.Saw(crd)
}
