package migration

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// RollbackOptions say which step Rollback takes back and how the check after
// a switch back runs. The zero value takes back the step of the version in flight.
type RollbackOptions struct {
	// Version is the version whose pair steps back; "" for the one in flight.
	Version string
	// SwitchStorage switches storage back even where no step switched it away.
	SwitchStorage bool
	// AcceptLoss keeps a switch back whose check finds objects losing fields: the check still
	// runs on every object and names each loss (results.RollbackResult.Switch), and the loss is recorded
	// on the CRD so the re-store after it takes the same loss without asking again.
	AcceptLoss  bool
	DryRun      DryRun
	Concurrency int
	PageSize    int64
	// SwitchTimeout bounds the wait for a switch back or its undo (0: DefaultSwitchTimeout).
	SwitchTimeout time.Duration
	// Progress hears the check after a switch back: its task and the count done.
	Progress func(task string, done, total int64)
}

// ErrRollbackUndone: storing at the old version would lose data; the switch
// back was undone (losses in results.RollbackResult.Switch).
var ErrRollbackUndone = errors.New("storing at the old version would lose data: the step back was undone")

// Rollback moves a version of the named CRD one stage back. Where that
// switches storage back, every object stored at the new version must then
// survive new→old→new, or the switch back is undone and the new version's
// bridge record dropped.
func Rollback(ctx context.Context, cs Clients, name string, opts RollbackOptions) (*results.RollbackResult, error) {
	c := cs.Clients
	res := &results.RollbackResult{}
	if err := opts.DryRun.check(false); err != nil {
		return res, err
	}
	// A stopped run's step first: a step back is planned from the CRD as it is then.
	if err := closeWindow(ctx, c, name, windowOptions{dryRun: opts.DryRun, timeout: opts.SwitchTimeout,
		check: verify.ProveOptions{Concurrency: opts.Concurrency, PageSize: opts.PageSize}}); err != nil {
		return res, err
	}
	plan := func(crd *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		return stages.PlanRollback(crd, opts.Version, stages.RollbackOptions{SwitchStorage: opts.SwitchStorage})
	}
	if opts.DryRun != DryRunClient {
		if err := rollbackAccess(ctx, c, name, opts, plan); err != nil {
			return res, err
		}
	}
	// provenOn is the CRD whose converter was proven: reused for that generation only.
	var provenOn *apiextensionsv1.CustomResourceDefinition
	step, err := applyStep(ctx, c.CRDs, name, opts.DryRun, func(crd *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		p, err := plan(crd)
		if err == nil && switchesStorage(p) && !sameGeneration(provenOn, crd) && opts.DryRun != DryRunClient {
			// As forward: the converter must answer both ways first.
			if err := verify.ProveConverter(ctx, c.Dynamic, crd, stages.StorageVersion(p.After)); err != nil {
				return nil, err
			}
			provenOn = crd
		}
		if err == nil && switchesStorage(p) && opts.DryRun.persists() {
			// Open until its check holds: a run killed before leaves it for the next command.
			stages.OpenSwitchBack(p, crd)
		}
		return p, err
	})
	if err != nil {
		return res, err
	}
	res.StepResult = step
	p := step.Plan
	if !opts.DryRun.persists() {
		return res, nil
	}
	if err := waitForServing(ctx, c, step, switchTimeout(opts.SwitchTimeout)); err != nil {
		return res, err
	}
	if !switchesStorage(p) {
		return res, nil
	}
	// Check the version storage left, as the CRD showed it: a step back planned
	// from a record (an annotation anyone may write) may switch elsewhere.
	left, to := stages.StorageVersion(step.Before), stages.StorageVersion(p.After)
	po := verify.ProveOptions{Concurrency: opts.Concurrency, PageSize: opts.PageSize}
	if opts.Progress != nil {
		task := fmt.Sprintf("check %s→%s→%s", left, to, left)
		po.Progress = func(done, total int64) { opts.Progress(task, done, total) }
	}
	undo := func(crd *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		return stages.PlanUndo(crd, p, left)
	}
	w := &lifecycle.Window{CRD: p.CRD, Kind: lifecycle.WindowSwitchCheck, Record: *p.Record}
	if opts.AcceptLoss {
		return res, acceptSwitchBack(ctx, c, step, left, opts, po, undo, w, res)
	}
	check, err := checkSwitch(ctx, c, p.CRD, left, switchTimeout(opts.SwitchTimeout), po, undo)
	res.Switch = check
	switch {
	case err != nil:
		return res, err
	case check.Back != nil:
		noteSwitchBack(ctx, c, check.Back.After, left, to, check, false, nil)
		return res, fmt.Errorf("%w: %s stays the storage version", ErrRollbackUndone, left)
	}
	return res, closeSwitchBack(ctx, c, p.CRD, w)
}

// errLossAccepted stops the undo of a switch back whose check finished with a loss the user
// accepted by name: the switch stands.
var errLossAccepted = errors.New("the loss is accepted by name")

// acceptSwitchBack runs the check after a switch back and keeps the switch despite a loss it
// finds, every object and field named; a check that does not finish, or a round trip that fails
// outright (no value lost: the object cannot be written at all), is no loss to accept, and the
// switch goes back as without AcceptLoss.
func acceptSwitchBack(ctx context.Context, c cluster.Clients, step *results.StepResult, left string, opts RollbackOptions, po verify.ProveOptions, undo planner, w *lifecycle.Window, res *results.RollbackResult) error {
	p, to, timeout := step.Plan, stages.StorageVersion(step.Plan.After), switchTimeout(opts.SwitchTimeout)
	check, err := checkSwitch(ctx, c, p.CRD, left, timeout, po, func(*apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		return nil, errLossAccepted
	})
	res.Switch = check
	switch {
	case err == nil:
		return closeSwitchBack(ctx, c, p.CRD, w)
	case errors.Is(err, errLossAccepted) && valuesLost(check):
		res.LossAccepted = true
		if err := closeSwitchBack(ctx, c, p.CRD, w); err != nil {
			return err
		}
		noteSwitchBack(ctx, c, step.After, left, to, check, true, stages.LossAcceptedFor(step.Before))
		return nil
	}
	// Not a loss to accept: checked again, undone on anything but a pass.
	check, err = checkSwitch(ctx, c, p.CRD, left, timeout, po, undo)
	res.Switch = check
	switch {
	case err != nil:
		return err
	case check.Back != nil:
		return fmt.Errorf("%w: %s stays the storage version (a round trip failed outright: no loss to accept)", ErrRollbackUndone, left)
	}
	return closeSwitchBack(ctx, c, p.CRD, w)
}

// valuesLost says whether every loss the check found is a value lost, none a failed round trip.
func valuesLost(check *results.SwitchCheck) bool {
	n := 0
	for _, p := range check.Proofs {
		for _, l := range p.Losses {
			if l.Error != "" || len(l.Diffs) == 0 {
				return false
			}
			n++
		}
	}
	return n > 0
}

// closeSwitchBack writes that a step back's switch stands: its window and the record it took back go.
func closeSwitchBack(ctx context.Context, c cluster.Clients, name string, w *lifecycle.Window) error {
	_, err := applyStep(ctx, c.CRDs, name, DryRunNone, func(crd *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		return stages.PlanCloseSwitchBack(crd, w)
	})
	if err != nil {
		return fmt.Errorf("%w on %s: the switch back stands, and writing so failed: %w", ErrWindowOpen, name, err)
	}
	return nil
}

func switchesStorage(p *lifecycle.Plan) bool {
	for _, c := range p.Changes {
		if c.Field == lifecycle.FieldStorage {
			return true
		}
	}
	return false
}

// rollbackAccess asks before the step back for the rights it and the check
// after it need: a refusal then would undo the step.
func rollbackAccess(ctx context.Context, c cluster.Clients, name string, opts RollbackOptions, plan planner) error {
	crd, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	a := cluster.Access{Op: "rollback", Need: []cluster.Permission{cluster.CRDPermission("update", "", name)}}
	// A step that cannot be planned is refused with its reason by the step.
	if p, err := plan(crd); err == nil && opts.DryRun.persists() && switchesStorage(p) {
		a.ObjectVerbs = switchVerbs(crd, stages.StorageVersion(crd), stages.StorageVersion(p.After))
	}
	return cluster.RequireAccess(ctx, c, crd, a, nil)
}

func switchTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultSwitchTimeout
	}
	return d
}
