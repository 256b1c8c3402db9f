package migration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// ErrWindowOpen: a run was stopped (kill -9, a node lost) with a step of its
// own still open on the CRD, and this command may not close it (a dry run).
var ErrWindowOpen = errors.New("a stopped run left a step open")

// errWindowGone: the window closed between the read and the plan (another command closed it).
var errWindowGone = errors.New("the window is closed")

// windowOptions are what closing a window needs from the command at hand.
type windowOptions struct {
	dryRun  DryRun
	timeout time.Duration
	notify  func(string)
	check   verify.ProveOptions
}

// closeWindow closes the window a stopped run left on the CRD before the
// command does anything else: versions served again are put back exactly as
// the step recorded it found them; a switch not yet checked is checked now,
// and kept, or switched back (ErrSwitchedBack). It returns once the API
// servers serve as the CRD says; nil where none is open.
func closeWindow(ctx context.Context, c cluster.Clients, name string, o windowOptions) error {
	crd, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	w := stages.OpenWindow(crd)
	switch {
	case w == nil:
		return nil
	case !o.dryRun.persists():
		return fmt.Errorf("%w on %s: %s; a dry run changes nothing, so it would plan from the CRD as the stopped run left it", ErrWindowOpen, name, stages.WindowReason(w))
	}
	if o.notify != nil {
		o.notify(fmt.Sprintf("%s: closing first what a stopped run left open: %s", name, stages.WindowReason(w)))
	}
	timeout := switchTimeout(o.timeout)
	if w.Kind == lifecycle.WindowSwitchCheck {
		return closeSwitchCheck(ctx, c, name, w, timeout, o.check)
	}
	step, err := applyStep(ctx, c.CRDs, name, DryRunNone, func(crd *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		now := stages.OpenWindow(crd)
		if now == nil || !sameWindow(now, w) {
			return nil, errWindowGone
		}
		return stages.PlanUndoWindow(crd, now)
	})
	switch {
	case errors.Is(err, errWindowGone):
		return nil
	case err != nil:
		return fmt.Errorf("%w on %s: putting back %s: %w", ErrWindowOpen, name, strings.Join(w.Versions, ", "), err)
	}
	if err := waitForServing(ctx, c, step, timeout); err != nil {
		return fmt.Errorf("%w on %s: the step back is written: %w", ErrWindowOpen, name, err)
	}
	return nil
}

// closeSwitchCheck runs the check a stopped promote owed its switch: it
// holds, and the switch stands (its record no longer open); or it does not,
// and storage goes back exactly as the step recorded it.
func closeSwitchCheck(ctx context.Context, c cluster.Clients, name string, w *lifecycle.Window, timeout time.Duration, po verify.ProveOptions) error {
	if len(w.Versions) != 1 {
		return fmt.Errorf("%w on %s: the switch's record names no one version it left (%v)", ErrWindowOpen, name, w.Versions)
	}
	old := w.Versions[0]
	back := func(crd *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		now := stages.OpenWindow(crd)
		if now == nil || !sameWindow(now, w) {
			return nil, fmt.Errorf("%w: the record of the switch to %s is gone", ErrChangedMeanwhile, w.Record.Version)
		}
		return stages.PlanUndoWindow(crd, now, old)
	}
	check, err := checkSwitch(ctx, c, name, old, timeout, po, back)
	switch {
	case err != nil:
		return fmt.Errorf("%w on %s: checking the switch from %s: %w", ErrWindowOpen, name, old, err)
	case check.Back != nil:
		if w.StepBack() {
			// As a step back undone in its own run: the ways on, not the same switch back.
			noteSwitchBack(ctx, c, check.Back.After, old, stages.StorageVersion(check.Back.Before), check, false, nil)
		}
		return fmt.Errorf("%w: the switch from %s a stopped run left unchecked loses data (%s): %s is the storage version again", ErrSwitchedBack, old, lossWords(check), old)
	case w.StepBack():
		return closeSwitchBack(ctx, c, name, w)
	}
	return closeChecked(ctx, c, name, w)
}

// closeChecked writes that a switch's check held: its record stays, no longer open.
func closeChecked(ctx context.Context, c cluster.Clients, name string, w *lifecycle.Window) error {
	_, err := applyStep(ctx, c.CRDs, name, DryRunNone, func(crd *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		return stages.PlanCloseChecked(crd, w)
	})
	if err != nil {
		return fmt.Errorf("%w on %s: the check after the switch held, and writing so failed: %w", ErrWindowOpen, name, err)
	}
	return nil
}

func sameWindow(a, b *lifecycle.Window) bool {
	return a.Kind == b.Kind && a.Record.Version == b.Record.Version && a.Record.From == b.Record.From && a.Record.To == b.Record.To
}

// lossWords says what the check found, its first proof's detail.
func lossWords(check *results.SwitchCheck) string {
	for _, p := range check.Proofs {
		if !p.Holds() {
			return p.Detail
		}
	}
	return "the check did not finish"
}
