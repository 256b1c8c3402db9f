package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/check"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/releaseplan"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// maxUpgradeSteps bounds a walk: each step moves a CRD one stage, and a release of many CRDs
// takes a few each; a walk past it is a plan that does not move, said as such.
const maxUpgradeSteps = 200

// UpgradeOptions holds what `kubectl crdversion upgrade` needs.
type UpgradeOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	Filenames   []string
	Recursive   bool
	Output      string
	DryRun      string
	SwitchGrace time.Duration
	fleetFlags

	format render.Format
	dryRun migration.DryRun
	// fleet is the clusters a fleet walk takes, canary first; none: one.
	fleet   []string
	release *manifest.Found
	clients *clients
	// globals are the global flags as given, for each step taken as a user types it; context
	// is the cluster's apart, for a fleet aims each walk at its own.
	globals []string
	context string
	// tmp holds the release's CRDs read from stdin, for the steps that take a schema from a file.
	tmp string
	// dropped are the live CRDs the release lacks that its owner may delete with their objects.
	dropped []results.Finding
}

// NewCmdUpgrade builds `kubectl crdversion upgrade`.
func NewCmdUpgrade(flags *genericclioptions.ConfigFlags, contexts *contextsFlag, streams genericiooptions.IOStreams) *cobra.Command {
	o := &UpgradeOptions{configFlags: flags, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "upgrade -f NEW",
		Short: "Plan and walk the way from the cluster to a release's CRDs: the plugin's steps, then the owner's apply, then what follows it",
		Long: `Plan the whole way from the CRDs on the cluster to the release's (NEW: files,
a directory, a Helm chart's rendered output, or - for stdin), and walk it.

The plan is the one status --release and check print: first the steps the
apply needs (a storage switch the release makes through a version it removes,
a downgrade's switches back one version at a time, the re-store and prune of
versions the release removes, managedFields entries at them moved while they
are still listed), then the owner's apply of the release, the way the CRD
shows it is applied (kubectl server-side, Helm, Argo CD, Flux), then what
follows it (the re-store after a storage switch the apply makes).

upgrade takes the plugin's steps one at a time, each exactly as its own
command would (every check, refusal and undo of promote, rollback and migrate),
planning again after each, and stops before the owner's apply, printing it.
Run it again after the apply: it takes the steps that follow, and exits 0
only once every CRD of the release is applied and stored at its storage
version only. It stops where a person must decide (a loss to accept or a
field to keep), with the ways on. The steps' own output goes to stderr.

--dry-run=client prints the plan and changes nothing (-o markdown for a pull
request, -o json|yaml for scripts).

On a fleet (--context given more than once, or --all-contexts) the first
cluster is the canary: it walks alone, and the others start only once it is
done (applied and clean), --parallel at a time, each to its own apply.

Exit status: 0 the release is applied and nothing is left, 3 steps remain
(the owner's apply, a decision, or a step refused: the output says which),
1 an error.`,
		Example: `  # The plan, for a pull request
  helm template my-release ./chart | kubectl crdversion upgrade -f - --dry-run=client -o markdown

  # Walk it up to the apply, apply, then finish
  kubectl crdversion upgrade -f release/crds/
  kubectl apply --server-side -f release/crds/
  kubectl crdversion upgrade -f release/crds/`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	cmd.Flags().StringSliceVarP(&o.Filenames, "filename", "f", nil, "The release's CRD manifests: a file, a directory, or - for stdin (repeatable)")
	cmd.Flags().BoolVarP(&o.Recursive, "recursive", "R", false, "Process the directories given with -f recursively")
	addOutputFlag(cmd, &o.Output, render.FormatMarkdown)
	addDryRunFlag(cmd, &o.DryRun, `Must be "none" or "client": with client, print the plan and change nothing`, "none", "client")
	cmd.Flags().DurationVar(&o.SwitchGrace, "switch-grace", migration.DefaultSwitchGrace, "Passed to each migrate step (see migrate --help)")
	o.addFleetFlags(cmd, contexts, "Walk the plan")
	return cmd
}

// Complete reads the release and keeps the global flags as given.
func (o *UpgradeOptions) Complete(cmd *cobra.Command, _ []string) error {
	var err error
	if o.format, err = parseOutput(o.Output, render.FormatMarkdown); err != nil {
		return err
	}
	if o.dryRun, err = parseDryRun(o.DryRun, o.ErrOut); err != nil {
		return err
	}
	if o.dryRun == migration.DryRunServer {
		return errors.New(`upgrade --dry-run=server is not supported: each step depends on the writes of the one before; --dry-run=client prints the plan`)
	}
	if len(o.Filenames) == 0 {
		return errors.New("-f is required: the release's CRD manifests (a file, a directory, or - for stdin)")
	}
	if o.release, err = manifest.ReadCRDs(cmd.Context(), o.Filenames, o.Recursive, o.In); err != nil {
		return err
	}
	// Global flags are parsed on this command's own set, where they are marked Changed: the
	// root's set records none of them.
	cmd.InheritedFlags().VisitAll(func(f *pflag.Flag) {
		if f.Changed && f.Name != "context" {
			o.globals = append(o.globals, "--"+f.Name+"="+f.Value.String())
		}
	})
	if o.fleet, err = o.clusters(o.configFlags); err != nil || len(o.fleet) > 0 {
		return err
	}
	if o.configFlags.Context != nil {
		o.context = *o.configFlags.Context
	}
	o.clients, err = newClients(o.configFlags, false)
	return err
}

// Validate checks the input before anything is sent.
func (o *UpgradeOptions) Validate() error {
	switch {
	case len(o.release.CRDs) == 0:
		return errors.New("no CustomResourceDefinition in the manifests given with -f")
	}
	return o.fleetFlags.validate()
}

// Run plans, and walks the plan unless asked for it only: on one cluster, or on each of a
// fleet, canary first.
func (o *UpgradeOptions) Run(ctx context.Context) error {
	render.WriteWarnings(o.ErrOut, o.release.Warnings)
	defer func() {
		if o.tmp != "" {
			_ = os.RemoveAll(o.tmp)
		}
	}()
	if len(o.fleet) == 0 {
		return o.walk(ctx)
	}
	return runOnFleet(ctx, o.IOStreams, o.configFlags, o.fleetFlags, o.fleet, o.format, func(ctx context.Context, flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, format render.Format) error {
		one := *o
		one.configFlags, one.IOStreams, one.format, one.context = flags, streams, format, *flags.Context
		var err error
		if one.clients, err = newClients(flags, false); err != nil {
			return err
		}
		return one.walk(ctx)
	})
}

// walk plans, takes the next step, and plans again, until the plan stops at the owner's
// apply, a decision, or its end.
func (o *UpgradeOptions) walk(ctx context.Context) error {
	var taken []string
	if err := o.readDropped(ctx); err != nil {
		return err
	}
	for {
		plans, err := releaseplan.Plan(ctx, o.clients.Clients, o.release.CRDs, o.manifest, 500)
		if err != nil {
			return err
		}
		crd, next := firstStep(plans)
		if o.dryRun == migration.DryRunClient || next == nil || next.Phase == lifecycle.PhaseApply || next.Decide || next.Step == nil || len(taken) == maxUpgradeSteps {
			return o.finish(plans, taken, next)
		}
		line := render.Command(*next.Step)
		if len(taken) > 0 && taken[len(taken)-1] == line {
			return fmt.Errorf("%s: the step %q left the plan where it was: see kubectl crdversion status %s", crd, line, crd)
		}
		fmt.Fprintf(o.ErrOut, "upgrade: %s: %s\n", next.Text, line)
		if err := o.take(ctx, *next.Step); err != nil {
			if !errors.Is(err, errAttention) && !errors.As(err, new(attentionError)) {
				return err
			}
			// The step's own output said why; the plan says what is left.
			fmt.Fprintf(o.ErrOut, "upgrade: stopped at %s: its output above says why and what to do; then run this again\n", line)
			if plans, perr := releaseplan.Plan(ctx, o.clients.Clients, o.release.CRDs, o.manifest, 500); perr == nil {
				_ = o.finish(plans, taken, nil)
			}
			return err
		}
		taken = append(taken, line)
	}
}

// finish prints the plan as it stands: exit 0 only when nothing is left.
func (o *UpgradeOptions) finish(plans []releaseplan.Planned, taken []string, next *lifecycle.Waypoint) error {
	ups := make([]lifecycle.Upgrade, len(plans))
	for i, p := range plans {
		ups[i] = p.Upgrade
	}
	r := render.NewUpgradeReport(ups, taken, o.dropped)
	if err := render.WriteUpgrade(o.Out, o.format, r); err != nil {
		return err
	}
	switch {
	case r.Done:
		return nil
	case next != nil && next.Phase == lifecycle.PhaseApply && o.dryRun == migration.DryRunNone && !o.format.Document():
		fmt.Fprintf(o.ErrOut, "upgrade: the plugin's steps before the apply are done: apply the release (%s), then run this again\n", next.Text)
	}
	return errAttention
}

// readDropped finds, once, the live CRDs the release lacks that its owner's apply may delete
// with every object of them: said before the plan, as check says them.
func (o *UpgradeOptions) readDropped(ctx context.Context) error {
	live := make([]*apiextensionsv1.CustomResourceDefinition, len(o.release.CRDs))
	for i, n := range o.release.CRDs {
		l, err := o.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, n.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("reading CRD %s: %w", n.Name, err)
		default:
			live[i] = l
		}
	}
	found, err := check.DroppedByRelease(ctx, o.clients.Clients, o.release.CRDs, live)
	o.dropped = slices.DeleteFunc(found, func(f results.Finding) bool { return f.Severity == lifecycle.SeverityNote })
	return err
}

// firstStep is the step to take next: every CRD's steps before the apply come first, for the
// owner applies the whole release at once; then the apply; then what follows it.
func firstStep(plans []releaseplan.Planned) (string, *lifecycle.Waypoint) {
	for _, phase := range []lifecycle.Phase{lifecycle.PhaseBefore, lifecycle.PhaseApply, lifecycle.PhaseAfter} {
		for _, p := range plans {
			for i, w := range p.Steps {
				if w.Phase == phase {
					return p.CRD, &p.Steps[i]
				}
			}
		}
	}
	return "", nil
}

// take runs one step as its command, typed with the same global flags: its checks, refusals and
// undo are the command's own. Its output goes to stderr: stdout holds the plan alone.
func (o *UpgradeOptions) take(ctx context.Context, s lifecycle.Step) error {
	if s.FromFile != "" && s.FromFile == o.stdinName() {
		path, err := o.stdinFile(s.CRD)
		if err != nil {
			return err
		}
		s.FromFile = path
	}
	args := strings.Fields(render.Command(s))[2:]
	if s.Op == lifecycle.OpMigrate {
		args = append(args, "--switch-grace="+o.SwitchGrace.String())
	}
	streams := genericiooptions.IOStreams{In: o.In, Out: o.ErrOut, ErrOut: o.ErrOut}
	root := NewCmdRoot(streams)
	args = append(args, o.globals...)
	if o.context != "" {
		args = append(args, "--context="+o.context)
	}
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// manifest is the file a CRD of the release came from, as its steps and the apply name it.
func (o *UpgradeOptions) manifest(name string) string {
	return cmp.Or(o.release.Path(name), o.stdinName())
}

// stdinName stands for the release read from stdin in what the plan prints.
func (o *UpgradeOptions) stdinName() string { return strings.Join(o.Filenames, ",") }

// stdinFile writes the release's CRD name to a file of its own, for a step that reads a schema
// from a file: stdin cannot be read twice.
func (o *UpgradeOptions) stdinFile(name string) (string, error) {
	var crd *apiextensionsv1.CustomResourceDefinition
	for _, c := range o.release.CRDs {
		if c.Name == name {
			crd = c
		}
	}
	if o.tmp == "" {
		dir, err := os.MkdirTemp("", "crdversion-upgrade-")
		if err != nil {
			return "", err
		}
		o.tmp = dir
	}
	c := crd.DeepCopy()
	c.TypeMeta = metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"}
	raw, err := yaml.Marshal(c)
	if err != nil {
		return "", err
	}
	path := filepath.Join(o.tmp, name+".yaml")
	return path, os.WriteFile(path, raw, 0o600)
}
