package migrate

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

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// Clients are the connections to one cluster that this package's
// functions read and write through; NewClients makes them.
type Clients struct {
	cluster.Clients
}

// NewClients connects to the cluster cfg names.
func NewClients(cfg *rest.Config) (Clients, error) {
	c, err := cluster.NewClients(cfg)
	return Clients{c}, err
}

// newRestoreRun is a pass over objects through c, tuned by opts.
func newRestoreRun(c cluster.Clients, opts RestoreOptions) restoreRun {
	return restoreRun{RestoreOptions: opts, throttled: c.Throttled}
}

// Options tune a migration. The zero value is what kubectl crdversion
// migrate does: every object re-stored, each proven first, and
// storedVersions pruned once every object is.
type Options struct {
	// Restore tunes the passes over objects.
	Restore RestoreOptions
	// KeepStoredVersions leaves status.storedVersions as it is: no prune,
	// however the pass ends (the CLI's --prune=false).
	KeepStoredVersions bool
	// Force goes ahead while the cluster's own migrator reports
	// StorageMigrating=True.
	Force bool
	// SwitchTimeout bounds the wait for the storage switch to take effect
	// (0: DefaultSwitchTimeout).
	SwitchTimeout time.Duration
	// CleanManagedFields drops managedFields entries of unserved versions
	// after the re-store pass.
	CleanManagedFields bool
	// AcceptLoss re-stores objects stored at an old version without proof
	// that old→new→old keeps them intact.
	AcceptLoss bool
	// SwitchGrace is how long after the storage switch a write that began
	// before it may still land at the old version (0: DefaultSwitchGrace;
	// NoSwitchGrace: none). The prune waits it out and re-stores once more.
	SwitchGrace time.Duration
	// Sightings say when the storage switch can have happened at the
	// latest (nil: what this process has seen; see Sightings).
	Sightings *Sightings
	// Notify, when set, hears what the migration is waiting for, in words
	// for a person.
	Notify func(string)
	// Countdown, when set, is started as a wait of known length begins
	// (what is waited for, and when it ends) and stopped when the wait
	// ends, however it ends: a wait of minutes shows the time left.
	Countdown func(what string, until time.Time) (stop func())
	// Log hears each phase as it ends (switch observed, webhook answered,
	// pass done, settle, prune), with its reason; the zero Logger discards
	// them.
	Log logr.Logger
}

const nothingToPrune = "storedVersions already holds only the storage version"

// Migrate re-stores every object of a CRD at its storage version and, when
// that is proven, prunes status.storedVersions. Its phases, each of which
// can stop it with the reason: the cluster's own migrator is not at work;
// the storage switch is in effect; a conversion webhook answers; every
// object is re-written, each checked first as it is written unless the CRD
// proves old→new→old for every object; once the switch grace is over,
// every object once more; the CRD did not change meanwhile; prune.
//
// An old version in storedVersions that is not served, and whose fields
// the schemas do not prove the storage version keeps, is served again,
// deprecated, while its objects are checked at it, and unserved after: what
// only its schema holds is the user's data, and no check sees it at
// another version.
func Migrate(ctx context.Context, cs Clients, name string, opts Options) (*results.Result, error) {
	c := cs.Clients
	opts = opts.withDefaults()
	if err := opts.Restore.DryRun.check(true); err != nil {
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
	if len(hidden) > 0 && lifecycle.StorageMigrating(crd) && !opts.Force {
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

// migrate is Migrate on the CRD as it is served now. kept, when set, is
// the CRD as its owner keeps it, whose unserved versions' managedFields
// entries a cleanup drops (nil: the CRD as served).
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
		// Migrate serves them again first where the CRD has objects: one
		// found now was not there then, or serving failed to show.
		some, err := hasObjects(ctx, c, crd)
		if err != nil {
			return nil, err
		}
		if some {
			return notServedResult(res, p.start, p.unserved), nil
		}
	}
	run := newRestoreRun(c, opts.Restore)
	run.rtt, run.defaults = p.rtt, p.defaults
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
		// Said before the first write: a controller of these objects sees a
		// new generation, and its owner may want the names first.
		opts.Notify(fmt.Sprintf("%s: re-storing writes the storage version %s's defaults (%s), which the schema of %s does not default, into each object stored there that lacks them: every read shows them already, but their generation moves; --dry-run=server names those objects without writing",
			name, res.Storage, strings.Join(p.defaults, ", "), strings.Join(p.defaultsFrom, ", ")))
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
	if opts.CleanManagedFields {
		// Dropped in the re-store's own write, which each pass proves for
		// its object: an object a check left alone keeps its entries too.
		if kept == nil {
			kept = crd
		}
		run.clean, run.cleaned = entriesCleaner(kept), &atomic.Int64{}
	}
	// Every write of the passes is proven for the CRD's generation they
	// began with: once it moves, no further write goes out.
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
	// The objects checked are the first pass's: a second pass checks them
	// again, and may add losses, never objects.
	objects := checked.Load() + res.Lost
	describeChecks(res, objects, losses)
	if opts.Restore.DryRun == DryRunServer && lifecycle.MigrationPending(crd) {
		// A dry run writes no etcd key, so every answer keeps its
		// resourceVersion: the API server does not tell a dry run which
		// objects it would re-encode. Each one accepted counts as one the
		// run re-stores (one found at the storage version then costs the
		// run a round trip), never as already there.
		res.Rewritten, res.Unchanged = res.Rewritten+res.Unchanged, 0
	}
	log.Info("re-store pass done", "rewritten", res.Rewritten, "unchanged", res.Unchanged, "lost", res.Lost, "failed", res.Failed, "stopped", res.StopReason)
	prune := !opts.KeepStoredVersions && opts.Restore.DryRun.persists()
	if prune && res.Complete() && grace.began(passStart) {
		// Writes begun before the switch may land at the old version until
		// the grace is over, however long the pass took: re-store once more
		// after it, before pruning.
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
	if opts.CleanManagedFields {
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
		res.PruneReason, res.PruneSkipped = results.PruneServersDisagree, "API servers answering behind one certificate disagree, after the pass, whether they serve this generation of the CRD: one may have answered for an object as if it were done"
	default:
		if err := pruneInto(ctx, c, crd, opts, res); err != nil {
			return nil, err
		}
	}
	log.Info("prune", "reason", res.PruneReason, "storedVersions", res.StoredVersionsAfter)
	if opts.Restore.DryRun.persists() && res.StopReason == "" {
		// The second pass checks the same objects again: its losses are
		// the first's, and any new.
		lost := res.Lost
		if res.Settle != nil {
			lost = max(lost, res.Settle.Lost)
		}
		noteRefused(ctx, c, crd, lost, losses, log)
	}
	res.Duration = time.Since(p.start)
	return res, nil
}

// describeChecks says, in the proofs of the versions a pass checked object
// by object, what the checks found: n objects checked, losses among them.
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
			pr.Detail = fmt.Sprintf("%s loses data on %d of %s: those were not re-stored", t, len(pr.Losses), lifecycle.Objects(n))
		default:
			pr.Detail = fmt.Sprintf("%s checked on each of %s as it was re-stored, through the API server: a dry run at %s, then the write at the resourceVersion checked", t, lifecycle.Objects(n), at)
		}
	}
}

// prepared is a CRD whose objects may now be re-stored: the storage switch
// is in effect and a conversion webhook answers. check are the old versions
// whose objects are checked one by one as they are re-stored. done says
// the migration ended before that, with res saying why.
type prepared struct {
	crd   *apiextensionsv1.CustomResourceDefinition
	res   *results.Result
	grace grace
	check []string
	// checksAll says check holds every old version in storedVersions: an
	// object no version of check shows is stored at none of them.
	checksAll bool
	// unserved are old versions no version shows all of: what only they
	// hold no check sees unless they are served again.
	unserved []string
	// defaults are what the storage version defaults and an old one does
	// not: a re-store persists them; defaultsFrom are those old versions.
	defaults, defaultsFrom []string
	start                  time.Time
	done                   bool
	rtt                    time.Duration
	// watchFrom is the resourceVersion of the last read that showed the
	// CRD at the generation proven: the passes watch it from there.
	watchFrom string
}

// prepare runs the phases before any object is re-stored. A CRD the
// cluster's migrator is at work on is refused without Force. a is what the
// caller needs allowed, besides the prune's write when it will prune.
func prepare(ctx context.Context, c cluster.Clients, name string, opts Options, log logr.Logger, a cluster.Access) (*prepared, error) {
	p := &prepared{start: time.Now()}
	crd, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return p, err
	}
	p.crd = crd
	p.grace = newGrace(crd, opts)
	res := &results.Result{CRD: crd.Name, Storage: lifecycle.StorageVersion(crd), StoredVersions: crd.Status.StoredVersions, Proofs: []results.Proof{}}
	res.StoredVersionsAfter = res.StoredVersions
	if lifecycle.StorageMigrating(crd) && !opts.Force {
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
		// Reading and sending back at an old version: the user's rights to
		// do so are asked for with the rest.
		a.ObjectVerbs = append(slices.Clone(a.ObjectVerbs), "get", "update")
	}
	if !opts.KeepStoredVersions && opts.Restore.DryRun.persists() {
		a.Need = append(slices.Clone(a.Need), cluster.CRDPermission("update", "status", name))
	}
	// Both only read, and a refusal ends the wait for the switch: at a
	// distance their round trips add up.
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
	log.Info("conversion answers", "webhook", lifecycle.ConvertsByWebhook(crd))
	p.res = res
	for _, pr := range res.Proofs {
		log.Info("old→new→old", "version", pr.Version, "by", pr.By, "detail", pr.Detail)
	}
	// The proofs hold for the CRD they were made on; a change since (a
	// storage switch back and forth, another schema) voids them.
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

// grace is the time after the storage switch during which a write begun
// before it may still land at the old version: the API server runs a
// request with the storage it had when the request began, for up to twice
// its request timeout.
type grace struct {
	name   string
	length time.Duration
	// seen is the latest moment the switch can have happened: when it
	// was first seen.
	seen      time.Time
	over      time.Time
	notify    func(string)
	countdown func(string, time.Time) func()
}

// graceMargin covers what the switch time cannot show: the API server
// observing the update a moment after it was written, and seconds of clock
// difference between it and this client.
const graceMargin = 5 * time.Second

// newGrace counts the grace from the latest moment the switch can have
// happened: when this CRD generation was first seen (Sightings). A CRD
// whose storedVersions names no other version has no grace: no object can
// be at another version, so nothing is waited for.
func newGrace(crd *apiextensionsv1.CustomResourceDefinition, opts Options) grace {
	g := grace{name: crd.Name, length: opts.SwitchGrace, notify: opts.Notify, countdown: opts.Countdown}
	switch {
	case g.length < 0 || !lifecycle.MigrationPending(crd):
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

// began reports a pass that began before the grace was over: a write
// begun before the switch may have landed behind it.
func (g grace) began(pass time.Time) bool { return !g.over.IsZero() && pass.Before(g.over) }

// wait waits until the grace is over, saying so and why it is as long as
// it is; false if interrupted.
func (g grace) wait(ctx context.Context, then string) bool {
	d := time.Until(g.over)
	if g.notify != nil {
		left := "the grace ended during the pass"
		if d > 0 {
			left = "waiting " + d.Round(time.Second).String()
		}
		// Nothing on the cluster dates a switch in a way a write cannot
		// move back (an update keeps the managedFields times its client
		// sent; an annotation is anyone's): the grace counts from the
		// first sighting, which on a machine new to the CRD is now.
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
// written: it reads one object at every served version, and at least one
// of those reads needs a conversion. A webhook that will not express an
// object at a version (a field the version has no form for) may have
// answered, with a no for that object: the probe then asks it to convert
// the smallest object the schema allows (verify.ProveConverter), and a webhook
// that does has answered. One the API server cannot call, whose answer it
// cannot read, or that converts nothing does not answer. Without a webhook
// there is nothing to prove.
func probeConversion(ctx context.Context, dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition) error {
	if !lifecycle.ConvertsByWebhook(crd) {
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
				return fmt.Errorf("%w (reading at %s: %v); nothing was written", perr, v.Name, err)
			}
			continue
		}
		return fmt.Errorf("%w: %s (reading at %s: %v): nothing was written", results.ErrWebhookUnavailable, crd.Name, v.Name, err)
	}
	return nil
}

// converting is a served version at which a write converts: v itself
// unless it is the storage version, else another served one ("" if none).
func converting(crd *apiextensionsv1.CustomResourceDefinition, v string) string {
	storage := lifecycle.StorageVersion(crd)
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

// pruneOptions tune prune.
type pruneOptions struct {
	// DryRun "server" sends the prune with dryRun=All; "client" is refused.
	DryRun DryRun
	// FieldManager names the write (default "kubectl-crdversion").
	FieldManager string
}

// pruneResult is what prune did.
type pruneResult struct {
	Pruned              bool
	Reason              results.PruneReason
	Message             string
	StoredVersionsAfter []string
}

// prune writes status.storedVersions down to the storage version, through
// /status with the resourceVersion it checked, and only if the CRD is still
// what the migration started from: the same storage version and generation,
// and storedVersions gained nothing but the storage version. Otherwise it
// says why not and leaves it.
func prune(ctx context.Context, client apiextensionsclient.Interface, started *apiextensionsv1.CustomResourceDefinition, opts pruneOptions) (*pruneResult, error) {
	if err := opts.DryRun.check(true); err != nil {
		return nil, err
	}
	if opts.FieldManager == "" {
		opts.FieldManager = cluster.FieldManager
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	storage := lifecycle.StorageVersion(started)
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

// pruneRefusal says why the CRD as it is now may not be pruned, or "".
func pruneRefusal(started, fresh *apiextensionsv1.CustomResourceDefinition) (results.PruneReason, string) {
	storage := lifecycle.StorageVersion(started)
	switch {
	case lifecycle.StorageVersion(fresh) != storage:
		return results.PruneStorageChanged, fmt.Sprintf("the storage version changed from %s to %s during the migration", storage, lifecycle.StorageVersion(fresh))
	case fresh.Generation != started.Generation:
		return results.PruneCRDChanged, fmt.Sprintf("the CRD was changed during the migration (generation %d → %d)", started.Generation, fresh.Generation)
	case lifecycle.StorageMigrating(fresh):
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

// PruneUnproven prunes storedVersions without a pass over objects, on the
// caller's word that every object is stored at the storage version: once
// the storage switch is in effect, under the same checks of the CRD as
// Migrate's prune. An object still stored at a pruned version becomes
// unreadable once that version is removed; Migrate proves what this takes
// on trust.
func PruneUnproven(ctx context.Context, cs Clients, name string, opts Options) (*results.Result, error) {
	c := cs.Clients
	opts = opts.withDefaults()
	if err := opts.Restore.DryRun.check(true); err != nil {
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
	res := &results.Result{CRD: crd.Name, Storage: lifecycle.StorageVersion(crd), StoredVersions: crd.Status.StoredVersions}
	if err := pruneInto(ctx, c, crd, opts, res); err != nil {
		return nil, err
	}
	return res, nil
}

// pruneInto prunes storedVersions and says in res how it went.
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
