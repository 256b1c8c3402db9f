package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// stepOptions is what promote and rollback share: one CRD, one lifecycle
// step planned from a fresh read, written with optimistic concurrency — or,
// with -f, planned on a manifest file and written into it.
type stepOptions struct {
	clusterTarget

	CRD      string
	Version  string
	DryRun   string
	Output   string
	Filename string
	// ShowManagedFields keeps managedFields in -o json|yaml, as kubectl's
	// flag of that name: without it they are left out, as kubectl does.
	ShowManagedFields bool
	// Force edits the live CRD even where a GitOps tool syncs it.
	Force bool
	// WaitTimeout bounds the wait for a switch, or its undo, to be in
	// effect on every API server.
	WaitTimeout time.Duration

	// clusterNamed: with -f, --context or --kubeconfig named a cluster,
	// whose clients a step that stops serving a version is checked
	// against.
	clusterNamed bool
	// held is the GitOps tool that kept this step off the live CRD: it
	// was planned only, for its manifest.
	held   *lifecycle.GitOps
	args   []string
	dryRun migration.DryRun
}

// stepPlanner plans the step for a CRD and a version ("" for the one in
// flight).
type stepPlanner func(crd *apiextensionsv1.CustomResourceDefinition, version string) (*lifecycle.Plan, error)

func (o *stepOptions) addFlags(cmd *cobra.Command) {
	addDryRunFlag(cmd, &o.DryRun, `"none", "client" (print the plan, change nothing) or "server" (the API server validates the change, nothing is persisted)`, "none", "client", "server")
	addOutputFlag(cmd, &o.Output)
	cmd.Flags().BoolVar(&o.ShowManagedFields, "show-managed-fields", false, "If true, keep the managedFields when printing objects in JSON or YAML format.")
	cmd.Flags().StringVarP(&o.Filename, "filename", "f", "", "CRD manifest file to change in place instead of the cluster (comments, key order and other documents are kept)")
	cmd.Flags().DurationVar(&o.WaitTimeout, "wait-timeout", migration.DefaultSwitchTimeout, "How long to wait for a storage version switch, or its undo, to take effect on every API server the plugin reaches")
	cmd.Flags().BoolVar(&o.Force, "force", false, "Edit the live CRD even when Argo CD or Flux syncs it from a manifest (its next sync reverts the edit)")
	o.oneConnection.addFlag(cmd)
}

// Complete reads the flags and, for a cluster, builds the clients.
func (o *stepOptions) Complete(cmd *cobra.Command, args []string) error {
	o.args = args
	var err error
	if o.dryRun, err = parseDryRun(o.DryRun, o.ErrOut); err != nil {
		return err
	}
	if o.format, err = parseOutput(o.Output); err != nil {
		return err
	}
	if o.Filename != "" {
		o.clusterNamed = cmd.Flags().Changed("context") || cmd.Flags().Changed("kubeconfig")
		return nil
	}
	if len(args) == 0 {
		return errors.New("a CRD is required (or -f FILE)")
	}
	o.CRD = args[0]
	if len(args) > 1 {
		o.Version = args[1]
	}
	return o.aim()
}

// Validate checks the flags before anything is sent.
func (o *stepOptions) Validate() error {
	switch {
	case o.Filename != "" && o.dryRun == migration.DryRunServer:
		return errors.New("--dry-run=server needs a cluster: with -f use --dry-run=client")
	case o.WaitTimeout < 0:
		return errors.New("--wait-timeout must not be negative")
	case o.Filename != "" && (o.AllContexts || len(o.contexts.given()) > 1):
		return errors.New("-f edits a file: no fleet (--all-contexts, several --context) with it")
	}
	return o.fleetFlags.validate()
}

// target resolves the CRD argument on the cluster.
func (o *stepOptions) target(ctx context.Context) (*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := o.clients.selectCRDs(ctx, "", o.CRD)
	if err != nil {
		return nil, err
	}
	return crds[0], nil
}

// holdFor keeps a step that edits spec.versions off a CRD that Argo CD or
// Flux syncs (its next sync would revert it): the step is planned only,
// as a client dry run, unless --force or a dry run was asked for.
func (o *stepOptions) holdFor(crd *apiextensionsv1.CustomResourceDefinition, editsVersions bool) {
	if o.Force || o.dryRun != migration.DryRunNone || !editsVersions {
		return
	}
	if o.held = stages.GitOpsOwner(crd); o.held != nil {
		o.dryRun = migration.DryRunClient
	}
}

// heldBack ends a step kept off the live CRD: the plan printed is the
// change to make in the manifest, and in says how to make it there. A new
// version is no step of a file (its schema is the author's to write): the
// plan's version is added to the manifest by hand.
func (o *stepOptions) heldBack(err error, in *lifecycle.Step) error {
	if err != nil || o.held == nil {
		return err
	}
	how := render.Command(*in) + " writes it there"
	if in.Op == lifecycle.OpPromote && in.To == lifecycle.StageIntroduced {
		how = fmt.Sprintf("add %s, as --from-file has it, to the versions of that manifest", in.Version)
	}
	fmt.Fprintf(o.prose(), "\n%s; %s (--force edits the live CRD anyway)\n", o.held.Reverts(in.CRD), how)
	return errAttention
}

// sawStep remembers the CRD a step wrote: when it switched the storage
// version, a migrate run later counts the switch grace from this moment.
func (o *stepOptions) sawStep(res *results.StepResult) {
	if o.dryRun == migration.DryRunNone && res.After != nil && stages.MigrationPending(res.After) {
		newSightings(o.configFlags).Saw(res.After)
	}
}

// reportStep reports a step taken on the cluster.
func (o *stepOptions) reportStep(name string, res *results.StepResult) error {
	if res.Replans > 0 {
		fmt.Fprintln(o.ErrOut, replanned(name, res.Replans))
	}
	if w := stages.OwnersWarning(stages.VersionsOwners(res.Before, cluster.FieldManager)); w != nil {
		fmt.Fprintf(o.ErrOut, "warning: %s\n", render.Advice(*w))
	}
	if res.FieldsKept != "" {
		fmt.Fprintf(o.ErrOut, "warning: the step is applied, but %s\n", render.FieldsKept(res.FieldsKept))
	}
	how := map[migration.DryRun]string{migration.DryRunNone: "applied", migration.DryRunClient: "dry run: nothing sent", migration.DryRunServer: "server dry run: validated, not persisted"}[o.dryRun]
	if o.held != nil {
		how = "not applied: " + o.held.Tool + " syncs this CRD"
	}
	return o.report(res.Plan, res.After, how)
}

func (o *stepOptions) report(p *lifecycle.Plan, after *apiextensionsv1.CustomResourceDefinition, how string) error {
	if err := render.WritePlan(o.prose(), p, how); err != nil {
		return err
	}
	if o.format.Document() {
		return render.WriteCRD(o.Out, o.format, after, o.ShowManagedFields)
	}
	return nil
}

// prose is where a step's words for people go: stdout, unless -o asks for
// the CRD as a document, which is then stdout's only content (a script
// pipes it into jq).
func (o *stepOptions) prose() io.Writer {
	if o.format.Document() {
		return o.ErrOut
	}
	return o.Out
}

// runOffline plans on the CRD in the file and edits the file in place,
// once gate (if any) lets the plan through.
func (o *stepOptions) runOffline(ctx context.Context, plan stepPlanner, gate func(context.Context, *lifecycle.Plan) error) error {
	crds, err := manifest.ReadEditable(ctx, o.Filename)
	if err != nil {
		return err
	}
	crd, version, err := pickOffline(crds, o.args)
	if err != nil {
		return err
	}
	if err := crd.Editable(); err != nil {
		return err
	}
	p, err := plan(crd.Obj, version)
	if err != nil {
		return err
	}
	if gate != nil {
		if err := gate(ctx, p); err != nil {
			return err
		}
	}
	if err := crd.Apply(p); err != nil {
		return err
	}
	how := "dry run: file unchanged"
	if o.dryRun != migration.DryRunClient {
		if err := writeFiles(ctx, []*manifest.File{crd.File}); err != nil {
			return err
		}
		how = "written to " + crd.File.Path
	}
	return o.report(p, p.After, how)
}

// pickOffline reads the arguments of -f: [CRD] [VERSION], where the CRD may
// be left out when the files hold just one.
func pickOffline(crds []manifest.CRD, args []string) (manifest.CRD, string, error) {
	objs := make([]apiextensionsv1.CustomResourceDefinition, len(crds))
	for i, c := range crds {
		objs[i] = *c.Obj
	}
	find := func(name string) (manifest.CRD, bool) {
		if crd, err := cluster.Resolve(objs, name, noDiscovery); err == nil {
			for _, c := range crds {
				if c.Obj.Name == crd.Name {
					return c, true
				}
			}
		}
		return manifest.CRD{}, false
	}
	switch {
	case len(crds) == 0:
		return manifest.CRD{}, "", errors.New("no CustomResourceDefinition in the file")
	case len(args) == 2:
		c, ok := find(args[0])
		if !ok {
			return manifest.CRD{}, "", fmt.Errorf("the file has no CRD %q", args[0])
		}
		return c, args[1], nil
	case len(args) == 1:
		if c, ok := find(args[0]); ok {
			return c, "", nil
		}
	}
	if len(crds) > 1 {
		return manifest.CRD{}, "", fmt.Errorf("the file holds %d CRDs: name one (kubectl crdversion promote -f FILE CRD VERSION)", len(crds))
	}
	version := ""
	if len(args) == 1 {
		version = args[0]
	}
	return crds[0], version, nil
}
