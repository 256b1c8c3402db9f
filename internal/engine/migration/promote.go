package migration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// PromoteOptions say which step Promote takes and how its passes run. The
// zero value takes the next step of the version in flight.
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
	DryRun             DryRun
	Concurrency        int
	PageSize           int64
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
	// OwnRequestsDir holds this plugin's records of its own requests, which the
	// deprecated-API metric counts as anyone's ("": none).
	OwnRequestsDir string
}

var (
	// ErrNotBridgeable: an object did not survive new→storage→new; the bridge
	// step was not written (losses in results.PromoteResult.Verify).
	ErrNotBridgeable = errors.New("objects do not round-trip")
	// ErrSwitchedBack: re-storing at the new version would lose data; the storage
	// version was switched back (losses in results.PromoteResult.Switch).
	ErrSwitchedBack = errors.New("re-storing would lose data: the storage version was switched back")
	// ErrManagedFieldsLeft: the version was removed, but some objects keep its
	// managedFields entries (results.PromoteResult.ManagedFields).
	ErrManagedFieldsLeft = errors.New("managedFields of the removed version are left on some objects")
)

// Promote moves a version of the named CRD one stage along introduced →
// bridge → deprecated → blocked → removed, with the check each step needs:
// bridge first proves new→storage→new on every object (recorded with the
// step); after the storage switch (deprecated) every object at the old
// version must survive old→new→old, or the switch is undone; after removed,
// the version's managedFields entries are dropped so server-side apply keeps
// working (kubernetes#111937). A step that changes serving returns once the
// API server serves as the CRD says; a dry run runs no pass.
func Promote(ctx context.Context, cs Clients, name string, opts PromoteOptions) (*results.PromoteResult, error) {
	c := cs.Clients
	res := &results.PromoteResult{}
	progress := func(task string) func(done, total int64) {
		if opts.Progress == nil {
			return nil
		}
		return func(done, total int64) { opts.Progress(task, done, total) }
	}
	if err := opts.DryRun.check(false); err != nil {
		return res, err
	}
	// A stopped run's step first: the step is planned from the CRD as it is then.
	if err := closeWindow(ctx, c, name, windowOptions{dryRun: opts.DryRun, timeout: opts.SwitchTimeout,
		check: verify.ProveOptions{Concurrency: opts.Concurrency, PageSize: opts.PageSize}}); err != nil {
		return res, err
	}
	if opts.DryRun != DryRunClient {
		if err := promoteAccess(ctx, c, name, opts); err != nil {
			return res, err
		}
	}
	var (
		verified *lifecycle.Verification
		// verifiedOn, provenOn: a re-plan reuses their check only for that generation.
		verifiedOn *apiextensionsv1.CustomResourceDefinition
		provenOn   *apiextensionsv1.CustomResourceDefinition
	)
	step, err := applyStep(ctx, c.CRDs, name, opts.DryRun, func(crd *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		t, err := stages.PromoteTarget(crd, opts.Version, opts.To, false)
		switch {
		case err != nil:
			return nil, err
		case t.Next == lifecycle.StageBridge && !sameGeneration(verifiedOn, crd):
			if verified, err = bridgeCheck(ctx, c, crd, t.Version, opts, res); err != nil {
				return nil, err
			}
			verifiedOn = crd
		case t.Next == lifecycle.StageDeprecated && t.From != lifecycle.StageServed && !sameGeneration(provenOn, crd) && opts.DryRun != DryRunClient:
			// The converter must answer, objects or not: every write at the old version needs it.
			if err := verify.ProveConverter(ctx, c.Dynamic, crd, t.Version); err != nil {
				return nil, err
			}
			provenOn = crd
		}
		p, err := stages.PlanPromote(crd, t.Version, opts.To, stages.PromoteOptions{
			Manifest: opts.Manifest, ConversionFromFile: opts.ConversionFromFile, DeprecationWarning: opts.DeprecationWarning, Verification: verified})
		if err == nil && t.Next == lifecycle.StageBlocked && opts.DryRun != DryRunClient {
			res.Overridden, err = clientsGate(ctx, c, crd, p, opts)
		}
		if err == nil && switchesStorage(p) && opts.DryRun.persists() {
			// Open until its check holds: a run killed before leaves it for the next command.
			stages.MarkOpen(p, lifecycle.WindowSwitchCheck)
		}
		return p, err
	})
	if err != nil {
		return res, err
	}
	res.StepResult = step
	if !opts.DryRun.persists() {
		return res, nil
	}
	if err := waitForServing(ctx, c, step, switchTimeout(opts.SwitchTimeout)); err != nil {
		return res, err
	}
	p := step.Plan
	switch {
	case switchesStorage(p):
		return res, promoteCheckSwitch(ctx, c, p, opts, res, progress)
	case p.To == lifecycle.StageRemoved:
		return res, promoteCleanManagedFields(ctx, c, p.CRD, opts, res, progress)
	}
	return res, nil
}

// bridgeCheck is verify's still-valid record of the bridge check, or a check now.
func bridgeCheck(ctx context.Context, c cluster.Clients, crd *apiextensionsv1.CustomResourceDefinition, version string, opts PromoteOptions, res *results.PromoteResult) (*lifecycle.Verification, error) {
	if rec, ok := recordedCheck(ctx, c, crd, version, opts.PageSize); ok {
		res.Reused = &rec
		return &rec, nil
	}
	v, err := verify.Verify(ctx, c, crd, verify.Options{Versions: []string{version}, Concurrency: opts.Concurrency, PageSize: opts.PageSize, Progress: opts.Progress})
	if err != nil {
		return nil, fmt.Errorf("verifying %s through %s: %w", crd.Name, version, err)
	}
	res.Verify = v
	if !v.Passed() {
		return nil, fmt.Errorf("%w: %s cannot be bridged", ErrNotBridgeable, version)
	}
	if v.Objects == 0 {
		// No object showed the converter at work: an object of its own does.
		if err := verify.ProveConverter(ctx, c.Dynamic, crd, version); err != nil {
			return nil, err
		}
	}
	rec := v.Verification()
	return &rec, nil
}

// recordedCheck is the recorded check of version, if the CRD and objects still match.
func recordedCheck(ctx context.Context, c cluster.Clients, crd *apiextensionsv1.CustomResourceDefinition, version string, pageSize int64) (lifecycle.Verification, bool) {
	rec, ok := stages.CheckFor(crd, version)
	if !ok {
		return rec, false
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
	if pageSize <= 0 {
		pageSize = pass.DefaultPageSize
	}
	set, err := cluster.ObjectSetOf(ctx, c.Metadata, gvr, pageSize)
	return rec, err == nil && set == rec.ObjectSet
}

// promoteCheckSwitch proves old→new→old right after the switch (the API server
// shows it only then) and switches back where it does not hold.
func promoteCheckSwitch(ctx context.Context, c cluster.Clients, p *lifecycle.Plan, opts PromoteOptions, res *results.PromoteResult, progress func(string) func(int64, int64)) error {
	back := func(crd *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		return stages.PlanUndo(crd, p)
	}
	check, err := checkSwitch(ctx, c, p.CRD, p.Pair.Old, switchTimeout(opts.SwitchTimeout), verify.ProveOptions{Concurrency: opts.Concurrency, PageSize: opts.PageSize,
		Progress: progress(fmt.Sprintf("check %s→%s→%s", p.Pair.Old, p.Pair.New, p.Pair.Old))}, back)
	res.Switch = check
	switch {
	case err != nil:
		return err
	case check.Back != nil:
		return fmt.Errorf("%w: %s was not deprecated", ErrSwitchedBack, p.Pair.Old)
	case p.Record != nil:
		// The check held: the switch stands, its window closed.
		return closeChecked(ctx, c, p.CRD, &lifecycle.Window{CRD: p.CRD, Kind: lifecycle.WindowSwitchCheck, Record: *p.Record})
	}
	return nil
}

func promoteCleanManagedFields(ctx context.Context, c cluster.Clients, name string, opts PromoteOptions, res *results.PromoteResult, progress func(string) func(int64, int64)) error {
	crd, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	res.ManagedFields = cleanManagedFields(ctx, c.Metadata, crd, newRestoreRun(c, RestoreOptions{Concurrency: opts.Concurrency, PageSize: opts.PageSize,
		Progress: progress("clean managedFields of " + name)}))
	if !res.ManagedFields.Complete() {
		return fmt.Errorf("%w (%s)", ErrManagedFieldsLeft, res.ManagedFields.Stopped)
	}
	return nil
}

// switchVerbs are the object verbs a switch from storage to version needs:
// a webhook's dry-run probe, and the per-object check unless schemas prove it.
func switchVerbs(crd *apiextensionsv1.CustomResourceDefinition, storage, version string) []string {
	var verbs []string
	if stages.ConvertsByWebhook(crd) {
		verbs = append(verbs, "create", "list", "update")
	}
	if ok, _ := schemacompat.SchemaProof(crd, storage, version); !ok {
		verbs = append(verbs, "list", "get", "update")
	}
	return slices.Compact(slices.Sorted(slices.Values(verbs)))
}

// promoteAccess asks before the step for every right it and what follows it
// need: a refusal after a switch would switch back.
func promoteAccess(ctx context.Context, c cluster.Clients, name string, opts PromoteOptions) error {
	crd, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	a := cluster.Access{Op: "promote", Need: []cluster.Permission{cluster.CRDPermission("update", "", name)}}
	// A step that cannot be planned is refused with its reason by the step.
	if t, err := stages.PromoteTarget(crd, opts.Version, opts.To, false); err == nil && opts.DryRun.persists() {
		switch t.Next {
		case lifecycle.StageDeprecated:
			a.ObjectVerbs = switchVerbs(crd, stages.StorageVersion(crd), t.Version)
		case lifecycle.StageRemoved:
			a.WriteVerbs = []string{"patch"}
		}
	}
	return cluster.RequireAccess(ctx, c, crd, a, nil)
}

func sameGeneration(a, b *apiextensionsv1.CustomResourceDefinition) bool {
	return a != nil && b != nil && a.UID == b.UID && a.Generation == b.Generation
}
