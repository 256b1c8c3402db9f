package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// PromoteOptions holds what `kubectl crdversion promote` needs.
type PromoteOptions struct {
	stepOptions
	To                 string
	FromFile           string
	ConversionFromFile bool
	DeprecationWarning string
	DespiteClients     []string
	// AuditLogs are read by the step to blocked for who requested the old
	// version; on a fleet each path holds {context}.
	AuditLogs []string

	// fromFile is the CRDs --from-file holds: one of them has the
	// version to introduce.
	fromFile []*apiextensionsv1.CustomResourceDefinition
}

// NewCmdPromote builds `kubectl crdversion promote`.
func NewCmdPromote(flags *genericclioptions.ConfigFlags, contexts *contextsFlag, streams genericiooptions.IOStreams) *cobra.Command {
	o := &PromoteOptions{stepOptions: stepOptions{clusterTarget: clusterTarget{configFlags: flags, IOStreams: streams}}}
	cmd := &cobra.Command{
		Use:   "promote CRD [VERSION] [--to STAGE]",
		Short: "Move a version one stage along introduced → bridge → deprecated → blocked → removed",
		Long: `Move VERSION (the version taking over) one stage along its lifecycle:

  introduced  add VERSION, served, next to the storage version (needs --from-file)
  bridge      check that every object round-trips VERSION→storage→VERSION
              through the API server, and record that it passed
  deprecated  make VERSION the storage version; deprecate the old one; then
              check that every object round-trips old→VERSION→old (what
              re-storing at VERSION makes permanent, visible only once
              VERSION is storage) and switch back if anything would be lost
  blocked     stop serving the old version
  removed     remove the old version (only once it is out of storedVersions)

Without --to it takes the next stage; --to names it, and any stage but the
next one is refused. VERSION defaults to the one version in flight.`,
		Example: `  # Introduce v1 from the new CRD manifest, then verify and bridge it
  kubectl crdversion promote widgets.example.com v1 --from-file widgets-crd.yaml
  kubectl crdversion promote widgets.example.com v1 --to bridge

  # See what deprecating would change, checked by the API server
  kubectl crdversion promote widgets.example.com v1 --dry-run=server

  # The same step on the manifest in a GitOps repository, in place
  kubectl crdversion promote -f deploy/crds/widgets.yaml v1`,
		Args:              cobra.RangeArgs(0, 2),
		ValidArgsFunction: completeCRDThenVersions(flags, 2),
		RunE:              runE(o),
	}
	o.addFlags(cmd)
	o.addFleetFlags(cmd, contexts, "Take the step")
	cmd.Flags().StringVar(&o.To, "to", "", "Stage to move to: "+strings.Join(stageNames(), "|")+" (default: the next one)")
	completeValues(cmd, "to", stageNames()...)
	cmd.Flags().StringVar(&o.FromFile, "from-file", "", "CRD manifest holding the new version's schema (for introduced)")
	cmd.Flags().BoolVar(&o.ConversionFromFile, "conversion-from-file", false, "With --from-file, take the manifest's spec.conversion too (default: the live one is kept; a live caBundle the manifest lacks is kept either way)")
	cmd.Flags().StringSliceVar(&o.DespiteClients, "despite-clients", nil, "For blocked: stop serving the old version even though these clients still use it (field managers, audit log users or NAMESPACE/NAME of a ServiceAccount, or \"requests\" for requests no evidence names), as the refusal names them")
	cmd.Flags().StringArrayVar(&o.AuditLogs, "audit-log", nil, "For blocked: an API server audit log (a file, or a folder of rotated files, gzip'd or not) naming who requested the old version since the migration, read instead of the deprecated-API metric; repeatable (one a server of an HA control plane); on a fleet the path holds {context}, each cluster's context name")
	cmd.Flags().StringVar(&o.DeprecationWarning, "deprecation-warning", "", "Warning clients of the old version get (for deprecated; default: <group>/<old> <Kind> is deprecated; use <group>/<new> <Kind>)")
	return cmd
}

// Complete reads the manifest and builds the clients.
func (o *PromoteOptions) Complete(cmd *cobra.Command, args []string) error {
	if err := o.stepOptions.Complete(cmd, args); err != nil {
		return err
	}
	if o.FromFile == "" {
		return nil
	}
	found, err := manifest.ReadCRDs(cmd.Context(), []string{o.FromFile}, false, o.In)
	if err != nil {
		return err
	}
	if len(found.CRDs) == 0 {
		return fmt.Errorf("%s holds no CustomResourceDefinition", o.FromFile)
	}
	o.fromFile = found.CRDs
	return nil
}

// manifestFor is the CRD of --from-file named name; else, when it holds
// one, that one, which the plan then refuses by its name.
func (o *PromoteOptions) manifestFor(name string) *apiextensionsv1.CustomResourceDefinition {
	for _, crd := range o.fromFile {
		if crd.Name == name {
			return crd
		}
	}
	if len(o.fromFile) > 0 {
		return o.fromFile[0]
	}
	return nil
}

// Validate checks the flags before anything is sent.
func (o *PromoteOptions) Validate() error {
	if err := o.stepOptions.Validate(); err != nil {
		return err
	}
	if o.ConversionFromFile && o.FromFile == "" {
		return errors.New("--conversion-from-file needs --from-file")
	}
	if o.To != "" && !isStage(o.To) {
		return fmt.Errorf("unknown stage %q: stages are %s", o.To, strings.Join(stageNames(), ", "))
	}
	return o.validateAuditLogs()
}

// Run takes the step on the file, or on the cluster with its checks
// (pkg/migration.Promote), and reports what each found.
func (o *PromoteOptions) Run(ctx context.Context) error {
	if len(o.fleet) > 0 {
		return o.onFleet(ctx, func(ctx context.Context, aimed clusterTarget) error {
			one := *o
			one.clusterTarget = aimed
			return one.Run(ctx)
		})
	}
	if o.Filename != "" {
		return o.runOffline(ctx, func(crd *apiextensionsv1.CustomResourceDefinition, version string) (*lifecycle.Plan, error) {
			return stages.PlanPromote(crd, version, lifecycle.Stage(o.To), stages.PromoteOptions{Manifest: o.manifestFor(crd.Name), DeprecationWarning: o.DeprecationWarning, Offline: true})
		}, o.offlineGate)
	}
	crd, err := o.target(ctx)
	if err != nil {
		return err
	}
	// A step that cannot be planned is refused with its reason by the step.
	target, _ := stages.PromoteTarget(crd, o.Version, lifecycle.Stage(o.To), false)
	o.holdFor(crd, target.Next.EditsVersions())
	bars := newTaskBars(o.ErrOut, isTerminal(o.ErrOut))
	res, err := migration.Promote(ctx, migration.Clients{Clients: o.clients.Clients}, crd.Name, migration.PromoteOptions{
		Version: o.Version, To: lifecycle.Stage(o.To), Manifest: o.manifestFor(crd.Name), ConversionFromFile: o.ConversionFromFile, DeprecationWarning: o.DeprecationWarning,
		DryRun: o.dryRun, SwitchTimeout: o.WaitTimeout, Progress: bars.Update,
		DespiteClients: o.DespiteClients, OwnRequestsDir: ownRecords(o.configFlags).Dir,
		AuditLogs: o.auditLogs(o.configFlags), AuditLogRead: o.auditLogRead,
	})
	bars.Finish()
	var inUse *migration.ClientsInUse
	if errors.As(err, &inUse) {
		return o.inUse(inUse, *stages.PromoteToStep(crd.Name, o.Version, lifecycle.StageBlocked))
	}
	o.despite(res.Overridden)
	if errors.Is(err, migration.ErrNotBridgeable) {
		if werr := render.WriteVerify(o.prose(), render.FormatTable, crd.Name, res.Verify); werr != nil {
			return werr
		}
		return notBridged(res.Verify.Versions[0], len(res.Verify.Losses))
	}
	if res.StepResult == nil {
		return err
	}
	if r := res.Reused; r != nil {
		fmt.Fprintln(o.ErrOut, reusedCheck(crd.Name, r))
	}
	o.sawStep(res.StepResult)
	if werr := o.reportStep(crd.Name, res.StepResult); werr != nil {
		return werr
	}
	if werr := render.WriteSwitchCheck(o.prose(), crd.Name, res.Switch); werr != nil {
		return werr
	}
	if res.ManagedFields != nil {
		if werr := render.WriteManagedFields(o.prose(), o.ErrOut, res.ManagedFields); werr != nil {
			return werr
		}
	}
	p := res.Plan
	if err == nil {
		return o.heldBack(nil, stages.PromoteToStep(p.CRD, p.Pair.New, p.To).InFile("CRD_MANIFEST"))
	}
	switch {
	case errors.Is(err, migration.ErrSwitchedBack):
		return switchedBack(p)
	case errors.Is(err, migration.ErrManagedFieldsLeft):
		return managedFieldsLeft(p.CRD, res.ManagedFields.Stopped)
	}
	return err
}

// inUse refuses a step that would stop serving a version clients use,
// with the command that takes it anyway.
func (o *PromoteOptions) inUse(err *migration.ClientsInUse, step lifecycle.Step) error {
	return attention(fmt.Errorf("%w; nothing was changed: once they use the storage version instead, run this again, or stop serving it anyway: %s%s%s --despite-clients=%s",
		err, render.Command(step), clusterArgs(o.configFlags), o.auditLogArgs(), strings.Join(append(slices.Clone(o.DespiteClients), err.Names()...), ",")))
}

// despite warns of each client a step stopped serving a version to.
func (o *PromoteOptions) despite(let []results.Client) {
	for _, cl := range let {
		fmt.Fprintf(o.ErrOut, "warning: stopped serving despite %s: %s\n", cl.Name, cl.Evidence)
	}
}

// offlineGate checks a step on a file that stops serving a version
// (blocked, removed) against the clients of the cluster --context or
// --kubeconfig names, as the step on that cluster is checked: the file is
// what that cluster gets next.
func (o *PromoteOptions) offlineGate(ctx context.Context, p *lifecycle.Plan) error {
	if !o.clusterNamed || (p.To != lifecycle.StageBlocked && p.To != lifecycle.StageRemoved) {
		return nil
	}
	c, err := newClients(o.configFlags, o.oneConnection)
	if err != nil {
		return err
	}
	let, err := migration.ClientsInUseFor(ctx, migration.Clients{Clients: c.Clients}, p, migration.PromoteOptions{DespiteClients: o.DespiteClients, OwnRequestsDir: ownRecords(o.configFlags).Dir,
		AuditLogs: o.auditLogs(o.configFlags), AuditLogRead: o.auditLogRead})
	var inUse *migration.ClientsInUse
	switch {
	case errors.As(err, &inUse):
		return o.inUse(inUse, *stages.PromoteToStep(p.CRD, p.Pair.New, p.To).InFile(o.Filename))
	case err != nil:
		return fmt.Errorf("check who uses %s on the cluster: %w", p.CRD, err)
	}
	o.despite(let)
	return nil
}

func stageNames() []string {
	out := make([]string, len(lifecycle.Stages))
	for i, s := range lifecycle.Stages {
		out[i] = string(s)
	}
	return out
}

func isStage(s string) bool {
	for _, st := range lifecycle.Stages {
		if string(st) == s {
			return true
		}
	}
	return false
}
