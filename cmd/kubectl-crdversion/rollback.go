package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// RollbackOptions holds what `kubectl crdversion rollback` needs.
type RollbackOptions struct {
	stepOptions
	SwitchStorage bool
	AcceptLoss    bool
}

// NewCmdRollback builds `kubectl crdversion rollback`.
func NewCmdRollback(flags *genericclioptions.ConfigFlags, contexts *contextsFlag, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RollbackOptions{stepOptions: stepOptions{clusterTarget: clusterTarget{configFlags: flags, IOStreams: streams}}}
	cmd := &cobra.Command{
		Use:   "rollback CRD [VERSION]",
		Short: "Move the version in flight one stage back",
		Long: `Move the CRD's version in flight (or VERSION) one stage back, undoing what
the step forward did and nothing more. Each step records on the CRD what it
changed (the annotation crdversion.kubectl.io/steps); the step back restores
exactly that, and leaves every other flag and text as it is:

  blocked → deprecated   serve again the versions the step stopped serving
  deprecated → bridge    where the step switched storage, make the old version
                         storage again; right after, every object must survive
                         new→old→new, or the switch back is undone
  deprecated → served    where it did not, undo the deprecations it made
  bridge → introduced    drop the round-trip record
  introduced → absent    remove the new version (nothing stored at it)

Without a record (a step made by hand), the same by rule: a switch back where
the old version is still in status.storedVersions. Objects written at the
newer version meanwhile stay stored at it until ` + "`kubectl crdversion migrate`" + `
re-stores them. --switch-storage makes the old version storage again even where
no step of the plugin switched it away (a downgrade to a release that stores
at it, a step another tool took), with the same check on every object. A removed version cannot be rolled back: its schema is gone.
With -f, the record is in the file, and the file comes back byte for byte.`,
		Example: `  kubectl crdversion rollback widgets.example.com --dry-run=server
  kubectl crdversion rollback widgets.example.com v1 --switch-storage
  kubectl crdversion rollback -f deploy/crds/widgets.yaml`,
		Args:              cobra.RangeArgs(0, 2),
		ValidArgsFunction: completeCRDThenVersions(flags, 2),
		RunE:              runE(o),
	}
	o.addFlags(cmd)
	o.addFleetFlags(cmd, contexts, "Take the step back")
	cmd.Flags().BoolVar(&o.AcceptLoss, "accept-loss", false, "Keep a switch back whose check finds objects losing fields: every object and field lost is still named, and the switch stands (the loss is noted on the CRD, so upgrade's re-store after it takes the same loss)")
	cmd.Flags().BoolVar(&o.SwitchStorage, "switch-storage", false, "Make the old version of the pair the storage version again even where no step of the plugin switched it away (a downgrade, another tool's step); every object stored at the newer version is checked newer→old→newer right after, and the switch undone on a loss")
	return cmd
}

// Run takes the step back on the file, or on the cluster with the check a
// switch back needs (pkg/migration.Rollback), and reports what it found.
func (o *RollbackOptions) Run(ctx context.Context) error {
	if len(o.fleet) > 0 {
		return o.onFleet(ctx, func(ctx context.Context, aimed clusterTarget) error {
			one := *o
			one.clusterTarget = aimed
			return one.Run(ctx)
		})
	}
	if o.Filename != "" {
		return o.runOffline(ctx, func(crd *apiextensionsv1.CustomResourceDefinition, version string) (*lifecycle.Plan, error) {
			return stages.PlanRollback(crd, version, stages.RollbackOptions{Offline: true, SwitchStorage: o.SwitchStorage})
		}, nil)
	}
	crd, err := o.target(ctx)
	if err != nil {
		return err
	}
	o.holdFor(crd, true)
	bars := newTaskBars(o.ErrOut, isTerminal(o.ErrOut))
	res, err := migration.Rollback(ctx, migration.Clients{Clients: o.clients.Clients}, crd.Name, migration.RollbackOptions{Version: o.Version, SwitchStorage: o.SwitchStorage, AcceptLoss: o.AcceptLoss, DryRun: o.dryRun, SwitchTimeout: o.WaitTimeout, Progress: bars.Update})
	bars.Finish()
	if res.StepResult == nil {
		return err
	}
	o.sawStep(res.StepResult)
	if werr := o.reportStep(crd.Name, res.StepResult); werr != nil {
		return werr
	}
	if werr := render.WriteSwitchCheck(o.prose(), crd.Name, res.Switch); werr != nil {
		return werr
	}
	p := res.Plan
	if errors.Is(err, migration.ErrRollbackUndone) {
		return rollbackUndone(p, o.SwitchStorage)
	}
	if err != nil {
		return err
	}
	if res.LossAccepted {
		fmt.Fprintln(o.ErrOut, lossAccepted(p, res.Switch))
	}
	return o.heldBack(nil, lifecycle.Step{Op: lifecycle.OpRollback, CRD: crd.Name, Version: o.Version}.InFile("CRD_MANIFEST"))
}

// Validate checks the flags before anything is sent: a loss is accepted only where a check finds it.
func (o *RollbackOptions) Validate() error {
	if o.AcceptLoss && o.Filename != "" {
		return errors.New("--accept-loss is for a switch back on a cluster, where every object is checked: a file has no objects (drop -f)")
	}
	return o.stepOptions.Validate()
}
