package migrate

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	svmclient "k8s.io/client-go/kubernetes/typed/storagemigration/v1"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// Clients are what a migration talks to the API server with.
type Clients struct {
	CRDs      apiextensionsclient.Interface
	Dynamic   dynamic.Interface
	Metadata  metadata.Interface
	Discovery discovery.DiscoveryInterface
	// FreshDiscovery, when set, gives a discovery client on connections of
	// its own and a func that closes them: each read of the storage switch
	// may then reach another API server behind a load balancer.
	FreshDiscovery func() (discovery.DiscoveryInterface, func(), error)
	// Access, when set, asks the API server (SelfSubjectAccessReview)
	// before anything is written whether the user may do it all.
	Access authorizationclient.SelfSubjectAccessReviewsGetter
	// Migrations, when set, creates and follows the cluster's own
	// StorageVersionMigrations (MigrateViaCluster).
	Migrations svmclient.StoragemigrationV1Interface

	// throttles counts 429 answers (NewClients counts them), for the
	// adaptive limit.
	throttles *atomic.Int64
}

// restoreOptions are opts for a pass over objects through c.
func (c Clients) restoreOptions(opts RestoreOptions) RestoreOptions {
	if c.throttles != nil {
		opts.throttled = c.throttles.Load
	}
	return opts
}

// Options tune a migration. The zero value is the default (no prune: say
// Prune to prune).
type Options struct {
	RestoreOptions
	// Prune storedVersions to the storage version when every object is
	// proven re-stored.
	Prune bool
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
	// negative: none). The prune waits it out and re-stores once more.
	SwitchGrace time.Duration
	// Notify, when set, hears what the migration is waiting for, in words
	// for a person.
	Notify func(string)
	// Log hears each phase as it ends (switch observed, webhook answered,
	// proof, pass done, settle, prune), with its reason; the zero Logger
	// discards them.
	Log logr.Logger
	// CheckProgress, when set, hears the progress of a per-object check of
	// old→new→old, when one runs before the re-store.
	CheckProgress func(done, total int64)
}

const nothingToPrune = "storedVersions already holds only the storage version"

// Migrate re-stores every object of a CRD at its storage version and, when
// that is proven, prunes status.storedVersions. Its phases, each of which
// can stop it with the reason: the cluster's own migrator is not at work;
// the storage switch is in effect; a conversion webhook answers; every
// object is re-written; the CRD did not change meanwhile; prune.
func Migrate(ctx context.Context, c Clients, name string, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	opts.RestoreOptions = c.restoreOptions(opts.RestoreOptions)
	if opts.DryRun == DryRunClient {
		return nil, ErrClientDryRun
	}
	log := opts.Log.WithValues("crd", name)
	p, err := prepare(ctx, c, name, opts, log, access{op: "migrate", objectVerbs: []string{"list"}, writeVerbs: []string{"patch"}})
	switch {
	case err != nil:
		return nil, err
	case p.done:
		return p.res, nil
	}
	crd, res, grace := p.crd, p.res, p.grace
	opts.rtt = p.rtt
	passStart := time.Now()
	res.RestoreResult = *Restore(ctx, c.Metadata, crd, opts.RestoreOptions)
	log.Info("re-store pass done", "rewritten", res.Rewritten, "unchanged", res.Unchanged, "failed", res.Failed, "stopped", res.StopReason)
	if opts.CleanManagedFields {
		res.ManagedFields = CleanManagedFields(ctx, c.Metadata, crd, opts.RestoreOptions)
	}
	prune := opts.Prune && opts.DryRun.persists()
	if prune && res.Complete() && grace.pending() && passStart.Before(grace.over) {
		// Writes begun before the switch may land at the old version until
		// the grace is over: re-store once more after it, before pruning.
		if grace.wait(ctx, "re-storing once more before pruning") {
			res.Settle = Restore(ctx, c.Metadata, crd, opts.RestoreOptions)
		} else {
			res.Settle = &RestoreResult{Failures: []Failure{}, StopReason: results.StopInterrupted, Stopped: "interrupted while waiting out the switch grace: not pruned; run again"}
		}
	}
	switch {
	case opts.DryRun == DryRunServer:
		res.PruneReason, res.PruneSkipped = results.PruneDryRun, "dry run: nothing was re-stored, so nothing is proven"
	case !opts.Prune:
		res.PruneReason, res.PruneSkipped = results.PruneDisabled, "--prune=false"
	case !res.Complete():
		res.PruneReason, res.PruneSkipped = results.PruneIncomplete, "not every object was re-stored"
	case res.Settle != nil && !res.Settle.Complete():
		res.PruneReason, res.PruneSkipped = results.PruneIncomplete, "the second pass after the switch grace did not re-store every object"
	default:
		if err := pruneInto(ctx, c, crd, opts, res); err != nil {
			return nil, err
		}
	}
	log.Info("prune", "reason", res.PruneReason, "storedVersions", res.StoredVersionsAfter)
	res.Duration = time.Since(p.start)
	return res, nil
}

// prepared is a CRD whose objects may now be re-stored: the storage switch
// is in effect, a conversion webhook answers, and re-storing every old
// version's objects is proven to lose nothing, on the CRD as it still is.
// done says the migration ended before that, with res saying why.
type prepared struct {
	crd   *apiextensionsv1.CustomResourceDefinition
	res   *Result
	grace grace
	start time.Time
	done  bool
	rtt   time.Duration
}

// prepare runs the phases before any object is re-stored. A CRD the
// cluster's migrator is at work on is refused without Force. a is what the
// caller needs allowed, besides the prune's write when it will prune.
func prepare(ctx context.Context, c Clients, name string, opts Options, log logr.Logger, a access) (*prepared, error) {
	p := &prepared{start: time.Now()}
	crd, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return p, err
	}
	p.crd = crd
	res := &Result{CRD: crd.Name, Storage: lifecycle.StorageVersion(crd), StoredVersions: crd.Status.StoredVersions, Proofs: []Proof{}}
	res.StoredVersionsAfter = res.StoredVersions
	if lifecycle.StorageMigrating(crd) && !opts.Force {
		return p, fmt.Errorf("%s has StorageMigrating=True: %w on it; let it finish, or pass --force", crd.Name, ErrClusterMigrating)
	}
	if opts.Prune && opts.DryRun.persists() {
		a.need = append(slices.Clone(a.need), crdPermission("update", "status", name))
	}
	// Both only read, and a refusal ends the wait for the switch: at a
	// distance their round trips add up.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return requireAccess(gctx, c, crd, a, opts.Notify) })
	g.Go(func() error { return WaitForSwitch(gctx, c.Discovery, c.FreshDiscovery, crd, opts.SwitchTimeout) })
	if err := g.Wait(); err != nil {
		return p, err
	}
	log.Info("storage switch in effect", "storage", res.Storage)
	if err := probeConversion(ctx, c.Dynamic, crd); err != nil {
		return p, err
	}
	log.Info("conversion answers", "webhook", crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter)
	if res.Proofs, err = proofs(ctx, c, crd, opts, false); err != nil {
		return p, err
	}
	p.grace = newGrace(crd, opts, p.start)
	// A proof of objects (checked now, or recorded) covers the objects as
	// they are: one that a write begun before the switch lands on later was
	// never checked. Then the pass waits out the grace, and the objects are
	// checked again first. A proof by the schemas covers every object.
	if byObjects(res.Proofs) && p.grace.pending() {
		if !p.grace.wait(ctx, "checking the objects again and re-storing them") {
			p.res, p.done = interrupted(res, p.start), true
			return p, nil
		}
		if res.Proofs, err = proofs(ctx, c, crd, opts, true); err != nil {
			return p, err
		}
	}
	p.res = res
	for _, pr := range res.Proofs {
		log.Info("old→new→old", "version", pr.Version, "by", pr.By, "holds", pr.Holds(), "detail", pr.Detail)
		if !pr.Holds() {
			res.Failures = []Failure{}
			res.StopReason, res.Stopped = results.StopNotProven, fmt.Sprintf("nothing was re-stored: %s (--accept-loss re-stores anyway)", pr.Detail)
			res.PruneReason, res.PruneSkipped = results.PruneIncomplete, "nothing was re-stored"
			res.Duration = time.Since(p.start)
			p.done = true
			return p, nil
		}
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
	if now.Generation != crd.Generation {
		res.Failures = []Failure{}
		res.StopReason, res.Stopped = results.StopNotProven, fmt.Sprintf("nothing was re-stored: the CRD changed while its objects were checked (generation %d → %d): run again", crd.Generation, now.Generation)
		res.PruneReason, res.PruneSkipped = results.PruneCRDChanged, "nothing was re-stored"
		res.Duration = time.Since(p.start)
		p.done = true
	}
	return p, nil
}

// proofs shows, unless losses are accepted, that re-storing the objects of
// every old version loses nothing; fresh ignores recorded checks.
func proofs(ctx context.Context, c Clients, crd *apiextensionsv1.CustomResourceDefinition, opts Options, fresh bool) ([]Proof, error) {
	if opts.AcceptLoss {
		var out []Proof
		for _, v := range crd.Status.StoredVersions {
			if v != lifecycle.StorageVersion(crd) {
				out = append(out, Proof{Version: v, Storage: lifecycle.StorageVersion(crd), By: results.ProofWaived, Detail: "not checked: --accept-loss"})
			}
		}
		return out, nil
	}
	return ProveRestorable(ctx, c, crd, ProveOptions{Concurrency: opts.Concurrency, Gentle: opts.Gentle, PageSize: opts.PageSize, Progress: opts.CheckProgress, DryRun: opts.DryRun, IgnoreRecords: fresh})
}

// grace is the time after the storage switch during which a write begun
// before it may still land at the old version: the API server runs a
// request with the storage it had when the request began, for up to twice
// its request timeout.
type grace struct {
	name   string
	length time.Duration
	over   time.Time
	notify func(string)
}

// graceMargin covers what the switch time cannot show: the API server
// observing the update a moment after it was written, and seconds of clock
// difference between it and this client.
const graceMargin = 5 * time.Second

func newGrace(crd *apiextensionsv1.CustomResourceDefinition, opts Options, firstSeen time.Time) grace {
	g := grace{name: crd.Name, length: opts.SwitchGrace, notify: opts.Notify}
	switch {
	case g.length < 0:
		return grace{}
	case g.length == 0:
		g.length = DefaultSwitchGrace
	}
	switched := SwitchedAt(crd)
	if switched.IsZero() {
		switched = firstSeen
	}
	g.over = switched.Add(g.length + graceMargin)
	return g
}

// pending reports a grace not over yet.
func (g grace) pending() bool { return !g.over.IsZero() && time.Now().Before(g.over) }

// wait waits until the grace is over, saying so; false if interrupted.
func (g grace) wait(ctx context.Context, then string) bool {
	if g.notify != nil {
		g.notify(fmt.Sprintf("%s: writes begun before the storage switch may land at the old version for up to %s after it: waiting %s, then %s",
			g.name, g.length, time.Until(g.over).Round(time.Second), then))
	}
	t := time.NewTimer(time.Until(g.over))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// byObjects reports proofs that cover the objects as they were checked,
// rather than every object the schemas allow.
func byObjects(ps []Proof) bool {
	for _, p := range ps {
		if p.By == results.ProofObjects || p.By == results.ProofRecord {
			return true
		}
	}
	return false
}

func interrupted(res *Result, start time.Time) *Result {
	res.Failures = []Failure{}
	res.StopReason, res.Stopped = results.StopInterrupted, "interrupted while waiting out the switch grace: nothing was re-stored; run again"
	res.PruneReason, res.PruneSkipped = results.PruneIncomplete, "nothing was re-stored"
	res.Duration = time.Since(start)
	return res
}

// probeConversion proves a conversion webhook answers before anything is
// written: it reads one object at every served version, and at least one
// of those reads needs a conversion. Without a webhook there is nothing to
// prove.
func probeConversion(ctx context.Context, dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition) error {
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		return nil
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}
		if _, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return fmt.Errorf("%w: %s (reading at %s: %v): nothing was written", ErrWebhookUnavailable, crd.Name, v.Name, err)
		}
	}
	return nil
}

// PruneOptions tune Prune.
type PruneOptions struct {
	// DryRun "server" sends the prune with dryRun=All; "client" is refused.
	DryRun DryRun
	// FieldManager names the write (default "kubectl-crdversion").
	FieldManager string
}

// PruneResult is what Prune did.
type PruneResult struct {
	Pruned              bool
	Reason              PruneReason
	Message             string
	StoredVersionsAfter []string
}

// Prune writes status.storedVersions down to the storage version, through
// /status with the resourceVersion it checked, and only if the CRD is still
// what the migration started from: the same storage version and generation,
// and storedVersions gained nothing but the storage version. Otherwise it
// says why not and leaves it.
func Prune(ctx context.Context, client apiextensionsclient.Interface, started *apiextensionsv1.CustomResourceDefinition, opts PruneOptions) (*PruneResult, error) {
	if opts.DryRun == DryRunClient {
		return nil, ErrClientDryRun
	}
	if opts.FieldManager == "" {
		opts.FieldManager = FieldManager
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	storage := lifecycle.StorageVersion(started)
	for range maxReplans {
		fresh, err := crds.Get(ctx, started.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if reason, why := pruneRefusal(started, fresh); why != "" {
			return &PruneResult{Reason: reason, Message: why, StoredVersionsAfter: fresh.Status.StoredVersions}, nil
		}
		if slices.Equal(fresh.Status.StoredVersions, []string{storage}) {
			return &PruneResult{Reason: results.PruneNothingToPrune, Message: nothingToPrune, StoredVersionsAfter: fresh.Status.StoredVersions}, nil
		}
		fresh.Status.StoredVersions = []string{storage}
		updated, err := crds.UpdateStatus(ctx, fresh, opts.DryRun.updateOptions(opts.FieldManager))
		if err == nil {
			return &PruneResult{Pruned: true, Reason: results.PrunePruned, StoredVersionsAfter: updated.Status.StoredVersions}, nil
		}
		if !apierrors.IsConflict(err) {
			return nil, fmt.Errorf("pruning storedVersions of %s: %w", started.Name, err)
		}
	}
	return &PruneResult{Reason: results.PruneKeptChanging, Message: fmt.Sprintf("%s kept changing while pruning: run again", started.Name)}, nil
}

// pruneRefusal says why the CRD as it is now may not be pruned, or "".
func pruneRefusal(started, fresh *apiextensionsv1.CustomResourceDefinition) (PruneReason, string) {
	storage := lifecycle.StorageVersion(started)
	switch {
	case lifecycle.StorageVersion(fresh) != storage:
		return results.PruneStorageChanged, fmt.Sprintf("the storage version changed from %s to %s during the migration: run it again", storage, lifecycle.StorageVersion(fresh))
	case fresh.Generation != started.Generation:
		return results.PruneCRDChanged, fmt.Sprintf("the CRD was changed during the migration (generation %d → %d): run it again", started.Generation, fresh.Generation)
	case lifecycle.StorageMigrating(fresh):
		return results.PruneClusterMigrating, fmt.Sprintf("the cluster's storage version migrator is at work on this CRD (StorageMigrating=True): when it is done, kubectl crdversion prune %s", fresh.Name)
	}
	for _, v := range fresh.Status.StoredVersions {
		if v != storage && !slices.Contains(started.Status.StoredVersions, v) {
			return results.PruneStoredGained, fmt.Sprintf("storedVersions gained %s during the migration: objects may be stored at it; run it again", v)
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
func PruneUnproven(ctx context.Context, c Clients, name string, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	if opts.DryRun == DryRunClient {
		return nil, ErrClientDryRun
	}
	crd, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if err := requireAccess(ctx, c, crd, access{op: "prune", need: []cluster.Permission{crdPermission("update", "status", name)}}, opts.Notify); err != nil {
		return nil, err
	}
	if err := WaitForSwitch(ctx, c.Discovery, c.FreshDiscovery, crd, opts.SwitchTimeout); err != nil {
		return nil, err
	}
	res := &Result{CRD: crd.Name, Storage: lifecycle.StorageVersion(crd), StoredVersions: crd.Status.StoredVersions}
	if err := pruneInto(ctx, c, crd, opts, res); err != nil {
		return nil, err
	}
	return res, nil
}

// pruneInto prunes storedVersions and says in res how it went.
func pruneInto(ctx context.Context, c Clients, crd *apiextensionsv1.CustomResourceDefinition, opts Options, res *Result) error {
	pr, err := Prune(ctx, c.CRDs, crd, PruneOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager})
	if err != nil {
		return err
	}
	res.Pruned, res.PruneReason, res.StoredVersionsAfter = pr.Pruned, pr.Reason, pr.StoredVersionsAfter
	if !pr.Pruned {
		res.PruneSkipped = pr.Message
	}
	return nil
}
