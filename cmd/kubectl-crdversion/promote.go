package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
)

// PromoteOptions holds what `kubectl crdversion promote` needs.
type PromoteOptions struct {
	stepOptions
	To                 string
	FromFile           string
	DeprecationWarning string

	manifest *apiextensionsv1.CustomResourceDefinition
	verified *lifecycle.Verification
}

// NewCmdPromote builds `kubectl crdversion promote`.
func NewCmdPromote(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &PromoteOptions{stepOptions: stepOptions{configFlags: flags, IOStreams: streams}}
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
	cmd.Flags().StringVar(&o.To, "to", "", "Stage to move to: "+strings.Join(stageNames(), "|")+" (default: the next one)")
	completeValues(cmd, "to", stageNames()...)
	cmd.Flags().StringVar(&o.FromFile, "from-file", "", "CRD manifest holding the new version's schema (for introduced)")
	cmd.Flags().StringVar(&o.DeprecationWarning, "deprecation-warning", "", "Warning clients of the old version get (for deprecated; default: <group>/<old> <Kind> is deprecated; use <group>/<new> <Kind>)")
	return cmd
}

// Complete reads the manifest and builds the clients.
func (o *PromoteOptions) Complete(args []string) error {
	if err := o.stepOptions.Complete(args); err != nil {
		return err
	}
	if o.FromFile == "" {
		return nil
	}
	raw, err := os.ReadFile(o.FromFile)
	if err != nil {
		return err
	}
	o.manifest = &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, o.manifest); err != nil {
		return fmt.Errorf("%s is not a CustomResourceDefinition manifest: %w", o.FromFile, err)
	}
	if o.manifest.Kind != "CustomResourceDefinition" {
		return fmt.Errorf("%s is not a CustomResourceDefinition manifest (kind %q)", o.FromFile, o.manifest.Kind)
	}
	return nil
}

// Validate checks the flags before anything is sent.
func (o *PromoteOptions) Validate() error {
	if err := o.stepOptions.Validate(); err != nil {
		return err
	}
	if o.To != "" && !isStage(o.To) {
		return fmt.Errorf("unknown stage %q: stages are %s", o.To, strings.Join(stageNames(), ", "))
	}
	return nil
}

// Run plans the step and applies it. On a cluster, the bridge step first
// runs the round-trip check and is refused if any object fails it.
func (o *PromoteOptions) Run(ctx context.Context) error {
	var planned *lifecycle.Plan
	err := o.run(ctx, func(crd *apiextensionsv1.CustomResourceDefinition, version string, offline bool) (*lifecycle.Plan, error) {
		if version == "" {
			var err error
			if version, err = lifecycle.InFlight(crd); err != nil {
				return nil, err
			}
		}
		opts := lifecycle.PromoteOptions{Manifest: o.manifest, DeprecationWarning: o.DeprecationWarning, Offline: offline, Verification: o.verified}
		if _, _, next, err := lifecycle.NextStage(crd, version, lifecycle.Stage(o.To), offline); err != nil {
			return nil, err
		} else if next == lifecycle.StageBridge && o.verified == nil {
			if err := o.verify(ctx, crd, version); err != nil {
				return nil, err
			}
			opts.Verification = o.verified
		}
		p, err := lifecycle.PlanPromote(crd, version, lifecycle.Stage(o.To), opts)
		planned = p
		return p, err
	})
	if err != nil || o.Filename != "" || o.dryRun != migrate.DryRunNone {
		return err
	}
	switch {
	case planned.To == lifecycle.StageDeprecated && planned.From != lifecycle.StageServed:
		return o.checkSwitch(ctx, planned)
	case planned.To == lifecycle.StageRemoved:
		return o.cleanManagedFields(ctx, planned.CRD)
	}
	return nil
}

// checkSwitch proves, right after the switch, that the objects stored at
// the old version survive being re-stored at the new one — the round trip
// old→new→old, which the API server shows only once the new version is
// storage — and switches back when it does not hold.
func (o *PromoteOptions) checkSwitch(ctx context.Context, p *lifecycle.Plan) error {
	mc, err := o.migrateClients()
	if err != nil {
		return err
	}
	bar := report.NewProgress(o.ErrOut, fmt.Sprintf("check %s→%s→%s", p.Pair.Old, p.Pair.New, p.Pair.Old), isTerminal(o.ErrOut), false)
	back := func(crd *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		return lifecycle.PlanRollback(crd, p.Pair.New)
	}
	res, err := migrate.CheckSwitch(ctx, mc, p.CRD, p.Pair.Old, migrate.DefaultSwitchTimeout,
		migrate.ProveOptions{Concurrency: migrate.DefaultConcurrency, PageSize: migrate.DefaultPageSize, Progress: bar.Update}, back)
	bar.Finish()
	if werr := report.WriteSwitchCheck(o.Out, p.CRD, res); werr != nil {
		return werr
	}
	switch {
	case err != nil:
		return err
	case res.Back != nil:
		return fmt.Errorf("%s was not deprecated: re-storing the objects stored at %s at %s would lose data (above); %s is the storage version again and no object was re-stored, but a write at %s between the switch and the switch back went through %s, so it was stored without those fields (kubectl crdversion migrate %s re-stores such objects at %s after checking them)",
			p.Pair.Old, p.Pair.Old, p.Pair.New, p.Pair.Old, p.Pair.Old, p.Pair.New, p.CRD, p.Pair.Old)
	}
	return nil
}

// cleanManagedFields drops the removed version's managedFields entries from
// every object, so server-side apply keeps working (kubernetes#111937).
func (o *PromoteOptions) cleanManagedFields(ctx context.Context, name string) error {
	crd, err := o.clients.crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	bar := report.NewProgress(o.ErrOut, "clean managedFields of "+name, isTerminal(o.ErrOut), false)
	mc, err := o.migrateClients()
	if err != nil {
		return err
	}
	res := migrate.CleanManagedFields(ctx, mc.Metadata, crd, migrate.RestoreOptions{Progress: bar.Update})
	bar.Finish()
	if err := report.WriteManagedFields(o.Out, o.ErrOut, res); err != nil {
		return err
	}
	if !res.Complete() {
		return fmt.Errorf("managedFields of %s not cleaned everywhere (%s); run: kubectl crdversion migrate %s --clean-managed-fields", name, res.Stopped, name)
	}
	return nil
}

// verify runs the round-trip check once, before the bridge step is written
// (a re-plan after a conflict reuses its result).
func (o *PromoteOptions) verify(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, version string) error {
	result, err := runVerify(ctx, o.configFlags, crd, nil, o.ErrOut)
	if err != nil {
		return err
	}
	if !result.Passed() {
		if err := report.WriteVerify(o.Out, report.FormatTable, crd.Name, result); err != nil {
			return err
		}
		return fmt.Errorf("%s cannot be bridged: %d object checks lose data or fail the round trip (above)", version, len(result.Losses))
	}
	rec := result.Verification()
	o.verified = &rec
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
