package migration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// Clients are the connections to one cluster this package works through.
type Clients struct {
	cluster.Clients
}

// NewClients connects to the cluster cfg names.
func NewClients(cfg *rest.Config) (Clients, error) {
	c, err := cluster.NewClients(cfg)
	return Clients{c}, err
}

func newRestoreRun(c cluster.Clients, opts RestoreOptions) restoreRun {
	return restoreRun{RestoreOptions: opts, throttled: c.Throttled}
}

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
	// CleanManagedFields): those a release removes that the plugin cannot stop
	// serving before it lands, whose entries then break server-side apply.
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
	// Countdown, when set, is called as a wait of known length begins; its stop, as it ends.
	Countdown func(what string, until time.Time) (stop func())
	// Log hears each phase as it ends, with its reason (zero Logger: discarded).
	Log logr.Logger
}

// cleaning says whether the re-store cleans managedFields entries too.
func (o Options) cleaning() bool { return o.CleanManagedFields || len(o.CleanVersions) > 0 }

const nothingToPrune = "storedVersions already holds only the storage version"

// Migrate re-stores every object of a CRD at its storage version, each one
// checked as it is written unless the CRD proves old→new→old for all, then
// prunes status.storedVersions; where something is not proven it stops, with
// the reason in the result. An unserved old version the schemas do not prove
// kept is served again, deprecated, for the checks, and unserved after.
func Migrate(ctx context.Context, cs Clients, name string, opts Options) (*results.Result, error) {
	c := cs.Clients
	opts = opts.withDefaults()
	if err := opts.Restore.DryRun.check(true); err != nil {
		return nil, err
	}
	// A stopped run's step first: every plan below reads the CRD as it left it.
	if err := closeWindow(ctx, c, name, windowOptions{dryRun: opts.Restore.DryRun, timeout: opts.SwitchTimeout, notify: opts.Notify,
		check: verify.ProveOptions{Concurrency: opts.Restore.Concurrency, PageSize: opts.Restore.PageSize}}); err != nil {
		return nil, err
	}
	if opts.AcceptLoss || !opts.Restore.DryRun.persists() {
		return migrate(ctx, c, name, opts, nil)
	}
	crd, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	hidden := hiddenVersions(crd)
	if len(hidden) > 0 && stages.StorageMigrating(crd) && !opts.Force {
		// Refused before the CRD is touched, as migrate refuses it.
		return nil, fmt.Errorf("%s has %w on it; let it finish, or force the migration", crd.Name, ErrStorageMigrating)
	}
	if len(hidden) == 0 {
		return migrate(ctx, c, name, opts, nil)
	}
	some, err := hasObjects(ctx, c, crd)
	switch {
	case err != nil:
		return nil, err
	case !some:
		return migrate(ctx, c, name, opts, nil)
	}
	return migrateServedAgain(ctx, c, crd, hidden, opts)
}

// migrate is Migrate on the CRD as served now; kept, if set, is the CRD the cleanup goes by.
func migrate(ctx context.Context, c cluster.Clients, name string, opts Options, kept *apiextensionsv1.CustomResourceDefinition) (*results.Result, error) {
	log := opts.Log.WithValues("crd", name)
	p, err := prepare(ctx, c, name, opts, log, cluster.Access{Op: "migrate", ObjectVerbs: []string{"list"}, WriteVerbs: []string{"patch"}})
	switch {
	case err != nil:
		return nil, err
	case p.done:
		return p.res, nil
	}
	crd, res, grace := p.crd, p.res, p.grace
	if len(p.unserved) > 0 && !opts.AcceptLoss && opts.Restore.DryRun.persists() {
		// Migrate serves these again where there are objects: refuse any found since.
		some, err := hasObjects(ctx, c, crd)
		if err != nil {
			return nil, err
		}
		if some {
			return notServedResult(res, p.start, p.unserved), nil
		}
	}
	run := newRestoreRun(c, opts.Restore)
	run.rtt, run.defaults = p.rtt, newStorageDefaults(c.Dynamic, crd, p.defaults)
	run.servers = newSwitchedServers(c, crd, opts.SwitchTimeout)
	run.servers.notify = opts.Notify
	if err := run.servers.agree(ctx); errors.Is(err, errCRDMoved) {
		res.Failures = []results.Failure{}
		res.StopReason, res.Stopped = results.StopCRDChanged, err.Error()
		res.PruneReason, res.PruneSkipped = results.PruneCRDChanged, "the migration stopped before re-storing"
		res.Duration = time.Since(p.start)
		return res, nil
	} else if err != nil {
		return nil, err
	}
	res.DefaultsPersisted = p.defaults
	if len(p.defaults) > 0 && opts.Notify != nil && opts.Restore.DryRun.persists() {
		// Told before the first write: each such object's generation moves.
		opts.Notify(defaultsNotice(crd, name, res.Storage, p.defaults, p.defaultsFrom))
	}
	var (
		checked atomic.Int64
		losses  []results.Loss
	)
	run.onLoss = func(l results.Loss) {
		if len(losses) < MaxFailuresKept {
			losses = append(losses, l)
		}
	}
	if opts.cleaning() {
		// Cleaned in the re-store's own, proven write: an unchecked object keeps them.
		if kept == nil {
			kept = crd
		}
		run.clean, run.cleaned = entriesCleaner(kept, opts.CleanVersions...), &atomic.Int64{}
	}
	// The proofs hold for this generation: once it moves, no further write.
	wctx, stopWatch := watchGeneration(ctx, c.CRDs, crd, p.watchFrom, log)
	defer stopWatch()
	pass := func() *results.RestoreResult {
		if len(p.check) == 0 {
			return restore(wctx, c.Metadata, crd, run)
		}
		return checkedRestore(wctx, c.Metadata, c.Dynamic, crd, p.check, p.checksAll, &checked, run)
	}
	var changed CRDChanged
	passStart := time.Now()
	res.RestoreResult = *pass()
	// A second pass checks the same objects again: it adds losses, never objects.
	objects := checked.Load() + res.Lost
	describeChecks(res, objects, losses)
	if opts.Restore.DryRun == DryRunServer && stages.MigrationPending(crd) {
		// A dry run writes no etcd key, so no answer shows which objects it would
		// re-encode: count each accepted one as re-stored.
		res.Rewritten, res.Unchanged = res.Rewritten+res.Unchanged, 0
	}
	log.Info("re-store pass done", "rewritten", res.Rewritten, "unchanged", res.Unchanged, "lost", res.Lost, "failed", res.Failed, "stopped", res.StopReason)
	prune := !opts.KeepStoredVersions && opts.Restore.DryRun.persists()
	if prune && res.Complete() && grace.began(passStart) {
		// A write begun before the switch may land at the old version until the grace ends.
		switch {
		case grace.wait(wctx, "re-storing once more before pruning"):
			res.Settle = pass()
			describeChecks(res, objects, losses)
		case errors.As(context.Cause(wctx), &changed):
			res.Settle = &results.RestoreResult{Failures: []results.Failure{}, StopReason: results.StopCRDChanged, Stopped: changed.Error()}
		default:
			res.Settle = &results.RestoreResult{Failures: []results.Failure{}, StopReason: results.StopInterrupted, Stopped: "interrupted while waiting out the switch grace: not pruned"}
		}
	}
	res.APIServers = run.servers.seen()
	res.DefaultsWritten = run.defaults.counted()
	if opts.cleaning() {
		res.ManagedFields = cleanSummary(ctx, c.Metadata, kept, run, &res.RestoreResult)
	}
	switch {
	case opts.Restore.DryRun == DryRunServer:
		res.PruneReason, res.PruneSkipped = results.PruneDryRun, "dry run: nothing was re-stored, so nothing is proven"
	case opts.KeepStoredVersions:
		res.PruneReason, res.PruneSkipped = results.PruneDisabled, "not asked to prune"
	case errors.As(context.Cause(wctx), &changed):
		res.PruneReason, res.PruneSkipped = results.PruneCRDChanged, changed.pruneSkipped()
	case !res.Complete():
		res.PruneReason, res.PruneSkipped = results.PruneIncomplete, "not every object was re-stored"
	case res.Settle != nil && !res.Settle.Complete():
		res.PruneReason, res.PruneSkipped = results.PruneIncomplete, "the second pass after the switch grace did not re-store every object"
	case !run.servers.stillAgree(ctx):
		res.PruneReason, res.PruneSkipped = results.PruneServersDisagree, run.servers.disagreement()
	default:
		if err := pruneInto(ctx, c, crd, opts, res); err != nil {
			return nil, err
		}
	}
	log.Info("prune", "reason", res.PruneReason, "storedVersions", res.StoredVersionsAfter)
	if opts.Restore.DryRun.persists() && res.StopReason == "" {
		lost := res.Lost
		if res.Settle != nil {
			lost = max(lost, res.Settle.Lost)
		}
		noteRefused(ctx, c, crd, lost, losses, log)
	}
	res.Duration = time.Since(p.start)
	return res, nil
}

func describeChecks(res *results.Result, n int64, losses []results.Loss) {
	for i := range res.Proofs {
		pr := &res.Proofs[i]
		if pr.By != results.ProofObjects {
			continue
		}
		t, at := verify.CheckedTrip(*pr), strings.Join(pr.CheckedAt, ", ")
		pr.Objects, pr.Losses = n, nil
		for _, l := range losses {
			if slices.Contains(pr.CheckedAt, l.Version) {
				pr.Losses = append(pr.Losses, l)
			}
		}
		switch {
		case len(pr.Losses) > 0:
			pr.Detail = fmt.Sprintf("%s loses data on %d of %s: those were not re-stored", t, len(pr.Losses), stages.Objects(n))
		default:
			pr.Detail = fmt.Sprintf("%s checked on each of %s as it was re-stored, through the API server: a dry run at %s, then the write at the resourceVersion checked", t, stages.Objects(n), at)
		}
	}
}

// prepared is a CRD whose objects may now be re-stored; check are the old
// versions checked object by object, done that the migration ended before any re-store.
type prepared struct {
	crd   *apiextensionsv1.CustomResourceDefinition
	res   *results.Result
	grace grace
	check []string
	// checksAll: check holds every old version in storedVersions.
	checksAll bool
	// unserved are old versions no served version shows in full.
	unserved []string
	// defaults are what the storage version defaults and defaultsFrom do not.
	defaults, defaultsFrom []string
	start                  time.Time
	done                   bool
	rtt                    time.Duration
	// watchFrom is the resourceVersion of the read showing the generation proven.
	watchFrom string
}

// prepare runs the phases before any re-store; a is the access the caller needs.
func prepare(ctx context.Context, c cluster.Clients, name string, opts Options, log logr.Logger, a cluster.Access) (*prepared, error) {
	p := &prepared{start: time.Now()}
	crd, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return p, err
	}
	p.crd = crd
	p.grace = newGrace(crd, opts)
	res := &results.Result{CRD: crd.Name, Storage: stages.StorageVersion(crd), StoredVersions: crd.Status.StoredVersions, Proofs: []results.Proof{}}
	res.StoredVersionsAfter = res.StoredVersions
	if stages.StorageMigrating(crd) && !opts.Force {
		return p, fmt.Errorf("%s has %w on it; let it finish, or force the migration", crd.Name, ErrStorageMigrating)
	}
	for _, v := range crd.Status.StoredVersions {
		if v == res.Storage {
			continue
		}
		for _, d := range schemacompat.DefaultsAdded(crd, v, res.Storage) {
			if !slices.Contains(p.defaultsFrom, v) {
				p.defaultsFrom = append(p.defaultsFrom, v)
			}
			if !slices.Contains(p.defaults, d) {
				p.defaults = append(p.defaults, d)
			}
		}
		pr, known := verify.ProofByCRD(crd, v, opts.AcceptLoss)
		if pr.By == results.ProofUnserved {
			p.unserved = append(p.unserved, v)
		}
		if !known {
			pr.By = results.ProofObjects
			for _, at := range pr.CheckedAt {
				if !slices.Contains(p.check, at) {
					p.check = append(p.check, at)
				}
			}
		}
		res.Proofs = append(res.Proofs, pr)
	}
	p.checksAll = true
	for _, v := range crd.Status.StoredVersions {
		p.checksAll = p.checksAll && (v == res.Storage || slices.Contains(p.check, v))
	}
	if len(p.check) > 0 {
		// The checks read and dry-run update at an old version.
		a.ObjectVerbs = append(slices.Clone(a.ObjectVerbs), "get", "update")
	}
	if !opts.KeepStoredVersions && opts.Restore.DryRun.persists() {
		a.Need = append(slices.Clone(a.Need), cluster.CRDPermission("update", "status", name))
	}
	// Both only read; at a distance their round trips add up.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return cluster.RequireAccess(gctx, c, crd, a, opts.Notify) })
	g.Go(func() error { return waitForSwitch(gctx, c.Discovery, c.FreshDiscovery, crd, opts.SwitchTimeout) })
	if err := g.Wait(); err != nil {
		return p, err
	}
	log.Info("storage switch in effect", "storage", res.Storage)
	if err := probeConversion(ctx, c.Dynamic, crd); err != nil {
		return p, err
	}
	log.Info("conversion answers", "webhook", stages.ConvertsByWebhook(crd))
	p.res = res
	for _, pr := range res.Proofs {
		log.Info("old→new→old", "version", pr.Version, "by", pr.By, "detail", pr.Detail)
	}
	// A change to the CRD since (a switch back and forth, a schema) voids the proofs.
	asked := time.Now()
	now, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return p, err
	}
	// A small read on a connection already open: about one round trip.
	p.rtt = time.Since(asked)
	p.watchFrom = now.ResourceVersion
	if now.Generation != crd.Generation {
		res.Failures = []results.Failure{}
		res.StopReason, res.Stopped = results.StopNotProven, fmt.Sprintf("nothing was re-stored: the CRD changed while the migration started (generation %d → %d)", crd.Generation, now.Generation)
		res.PruneReason, res.PruneSkipped = results.PruneCRDChanged, "the migration stopped before re-storing"
		res.Duration = time.Since(p.start)
		p.done = true
	}
	return p, nil
}

// grace is the time after the storage switch in which a write begun before it
// may land at the old version: the API server keeps a request's old storage.
type grace struct {
	name   string
	length time.Duration
	// seen is the latest moment the switch can have happened.
	seen      time.Time
	over      time.Time
	notify    func(string)
	countdown func(string, time.Time) func()
}

// graceMargin covers the API server seeing the update late, and clock skew.
const graceMargin = 5 * time.Second

// newGrace counts from the first sighting of this generation (Sightings).
func newGrace(crd *apiextensionsv1.CustomResourceDefinition, opts Options) grace {
	g := grace{name: crd.Name, length: opts.SwitchGrace, notify: opts.Notify, countdown: opts.Countdown}
	switch {
	case g.length < 0 || !stages.MigrationPending(crd):
		return grace{}
	case g.length == 0:
		g.length = DefaultSwitchGrace
	}
	seen := opts.Sightings
	if seen == nil {
		seen = processSightings
	}
	g.seen = seen.Saw(crd)
	g.over = g.seen.Add(g.length + graceMargin)
	return g
}

// began reports a pass begun before the grace was over.
func (g grace) began(pass time.Time) bool { return !g.over.IsZero() && pass.Before(g.over) }

// wait waits out the grace, saying why it is so long; false if interrupted.
func (g grace) wait(ctx context.Context, then string) bool {
	d := time.Until(g.over)
	if g.notify != nil {
		left := "the grace ended during the pass"
		if d > 0 {
			left = "waiting " + d.Round(time.Second).String()
		}
		// Nothing on the cluster dates a switch beyond a writer's reach (managedFields
		// times, annotations): the grace counts from the first sighting.
		g.notify(fmt.Sprintf("%s: writes begun before the storage switch may land at the old version for up to %s after it: %s, then %s (the switch is dated by when this machine first saw it, %s: the cluster keeps no time of it that a write cannot change)",
			g.name, g.length, left, then, g.seen.Format(time.TimeOnly)))
	}
	if g.countdown != nil && d > 0 {
		defer g.countdown(g.name+": switch grace", g.over)()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// probeConversion proves a conversion webhook answers before anything is
// written: a read at every served version, and where the webhook refuses an
// object, a conversion of the smallest object the schema allows.
func probeConversion(ctx context.Context, dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition) error {
	if !stages.ConvertsByWebhook(crd) {
		return nil
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}
		_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			continue
		}
		if at := converting(crd, v.Name); pass.IsConversionRefusal(err) && at != "" {
			if perr := verify.ProveConverter(ctx, dyn, crd, at); perr != nil {
				return fmt.Errorf("%w (reading at %s: %w); nothing was written", perr, v.Name, err)
			}
			continue
		}
		return fmt.Errorf("%w: %s (reading at %s: %w): nothing was written", results.ErrWebhookUnavailable, crd.Name, v.Name, err)
	}
	return nil
}

// converting is a served version whose writes convert ("" if none).
func converting(crd *apiextensionsv1.CustomResourceDefinition, v string) string {
	storage := stages.StorageVersion(crd)
	if v != storage {
		return v
	}
	for _, ver := range crd.Spec.Versions {
		if ver.Served && ver.Name != storage {
			return ver.Name
		}
	}
	return ""
}

type pruneOptions struct {
	// DryRun "server" sends the prune with dryRun=All; "client" is refused.
	DryRun DryRun
	// FieldManager names the write (default "kubectl-crdversion").
	FieldManager string
}

type pruneResult struct {
	Pruned              bool
	Reason              results.PruneReason
	Message             string
	StoredVersionsAfter []string
}

// prune writes status.storedVersions down to the storage version, with the
// resourceVersion it checked, unless pruneRefusal objects; then it says why.
func prune(ctx context.Context, client apiextensionsclient.Interface, started *apiextensionsv1.CustomResourceDefinition, opts pruneOptions) (*pruneResult, error) {
	if err := opts.DryRun.check(true); err != nil {
		return nil, err
	}
	if opts.FieldManager == "" {
		opts.FieldManager = cluster.FieldManager
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	storage := stages.StorageVersion(started)
	for range maxReplans {
		fresh, err := crds.Get(ctx, started.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if reason, why := pruneRefusal(started, fresh); why != "" {
			return &pruneResult{Reason: reason, Message: why, StoredVersionsAfter: fresh.Status.StoredVersions}, nil
		}
		if slices.Equal(fresh.Status.StoredVersions, []string{storage}) {
			return &pruneResult{Reason: results.PruneNothingToPrune, Message: nothingToPrune, StoredVersionsAfter: fresh.Status.StoredVersions}, nil
		}
		fresh.Status.StoredVersions = []string{storage}
		updated, err := crds.UpdateStatus(ctx, fresh, opts.DryRun.updateOptions(opts.FieldManager))
		if err == nil {
			return &pruneResult{Pruned: true, Reason: results.PrunePruned, StoredVersionsAfter: updated.Status.StoredVersions}, nil
		}
		if !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("pruning storedVersions of %s: %w", started.Name, err)
		}
	}
	return &pruneResult{Reason: results.PruneKeptChanging, Message: fmt.Sprintf("%s kept changing while pruning", started.Name)}, nil
}

func pruneRefusal(started, fresh *apiextensionsv1.CustomResourceDefinition) (results.PruneReason, string) {
	storage := stages.StorageVersion(started)
	switch {
	case stages.StorageVersion(fresh) != storage:
		return results.PruneStorageChanged, fmt.Sprintf("the storage version changed from %s to %s during the migration", storage, stages.StorageVersion(fresh))
	case fresh.Generation != started.Generation:
		return results.PruneCRDChanged, fmt.Sprintf("the CRD was changed during the migration (generation %d → %d)", started.Generation, fresh.Generation)
	case stages.StorageMigrating(fresh):
		return results.PruneClusterMigrating, "the cluster's storage version migrator is at work on this CRD (StorageMigrating=True)"
	}
	for _, v := range fresh.Status.StoredVersions {
		if v != storage && !slices.Contains(started.Status.StoredVersions, v) {
			return results.PruneStoredGained, fmt.Sprintf("storedVersions gained %s during the migration: objects may be stored at it", v)
		}
	}
	found := false
	for _, v := range fresh.Spec.Versions {
		found = found || v.Name == storage
	}
	if !found {
		return results.PruneStorageNotInSpec, fmt.Sprintf("%s is not in spec.versions: storedVersions must never name a version the CRD lacks", storage)
	}
	return "", ""
}

// PruneUnproven prunes storedVersions on the caller's word that every object
// is at the storage version, with Migrate's checks of the CRD but no pass: an
// object still at a pruned version becomes unreadable once it is removed.
func PruneUnproven(ctx context.Context, cs Clients, name string, opts Options) (*results.Result, error) {
	c := cs.Clients
	opts = opts.withDefaults()
	if err := opts.Restore.DryRun.check(true); err != nil {
		return nil, err
	}
	// A stopped run's step first, as every command does: a version it served
	// again goes back, and a switch it did not check is checked or undone.
	if err := closeWindow(ctx, c, name, windowOptions{dryRun: opts.Restore.DryRun, timeout: opts.SwitchTimeout, notify: opts.Notify,
		check: verify.ProveOptions{Concurrency: opts.Restore.Concurrency, PageSize: opts.Restore.PageSize}}); err != nil {
		return nil, err
	}
	crd, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if err := cluster.RequireAccess(ctx, c, crd, cluster.Access{Op: "prune", Need: []cluster.Permission{cluster.CRDPermission("update", "status", name)}}, opts.Notify); err != nil {
		return nil, err
	}
	if err := waitForSwitch(ctx, c.Discovery, c.FreshDiscovery, crd, opts.SwitchTimeout); err != nil {
		return nil, err
	}
	res := &results.Result{CRD: crd.Name, Storage: stages.StorageVersion(crd), StoredVersions: crd.Status.StoredVersions}
	if err := pruneInto(ctx, c, crd, opts, res); err != nil {
		return nil, err
	}
	return res, nil
}

func pruneInto(ctx context.Context, c cluster.Clients, crd *apiextensionsv1.CustomResourceDefinition, opts Options, res *results.Result) error {
	pr, err := prune(ctx, c.CRDs, crd, pruneOptions{DryRun: opts.Restore.DryRun, FieldManager: opts.Restore.FieldManager})
	if err != nil {
		return err
	}
	res.Pruned, res.PruneReason, res.StoredVersionsAfter = pr.Pruned, pr.Reason, pr.StoredVersionsAfter
	if !pr.Pruned {
		res.PruneSkipped = pr.Message
	}
	return nil
}
