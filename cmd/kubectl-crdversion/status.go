package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/releaseplan"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// countWorkers bounds the object counts -o wide asks for at once: enough to
// hide round-trips on a cluster of hundreds of CRDs without a burst of load.
const countWorkers = 8

// StatusOptions holds what `kubectl crdversion status` needs.
type StatusOptions struct {
	configFlags *genericclioptions.ConfigFlags
	contexts    *contextsFlag
	genericiooptions.IOStreams

	Names       []string
	Selector    string
	Group       string
	Output      string
	Filenames   []string
	Recursive   bool
	NoHeaders   bool
	AllContexts bool
	Release     []string

	format  render.Format
	release *manifest.Found
	clients *clients
	// missing are the names no CRD answers to: outside a fleet, the CRDs
	// found are shown and these said after them, as kubectl get does.
	missing []error
	inFleet bool
}

// NewCmdStatus builds `kubectl crdversion status`.
func NewCmdStatus(flags *genericclioptions.ConfigFlags, contexts *contextsFlag, streams genericiooptions.IOStreams) *cobra.Command {
	o := &StatusOptions{configFlags: flags, contexts: contexts, IOStreams: streams}
	cmd := &cobra.Command{
		Use:         "status [CRD ...]",
		Annotations: map[string]string{takesFleet: "true"},
		Short:       "Show every CRD version's flags, stage and the next step",
		Long: `Show every version of the named CRDs (or of all CRDs): served, storage,
deprecated, whether it is in status.storedVersions, its lifecycle stage, and
the next step to take. A CRD is named by its name (widgets.example.com) or as
kubectl names its resource (plural, singular, short name or kind).

For each CRD whose spec changed since it was created, the metadata of its
objects is listed too: objects whose managedFields name a version the CRD
no longer serves are counted and named, for server-side apply of them fails
once that version is gone (the next step cleans the entries: moved to the storage
version while that version is listed, dropped once it is gone).

Exit status is 3 when a CRD has an error-level problem, such as a
storedVersions entry missing from spec.versions, or objects whose
managedFields name a version the CRD no longer has.`,
		Example: `  # Every CRD in the cluster
  kubectl crdversion status

  # One CRD, by short name, with object counts and deprecation warnings
  kubectl crdversion status wd -o wide

  # All CRDs of one group, as a document for scripts
  kubectl crdversion status --group example.com -o json

  # Every CRD manifest in a repository, without a cluster
  kubectl crdversion status -f deploy/crds/

  # The next step toward a release: the one check and upgrade give
  kubectl crdversion status --release release/crds/`,
		ValidArgsFunction: completeCRDNames(flags),
		RunE:              runE(o),
	}
	cmd.Flags().StringVarP(&o.Selector, "selector", "l", "", "Label selector on the CRDs (e.g. app=foo)")
	cmd.Flags().StringVar(&o.Group, "group", "", "Only CRDs of this API group")
	addOutputFlag(cmd, &o.Output, render.FormatWide)
	cmd.Flags().BoolVar(&o.NoHeaders, "no-headers", false, "When using the default or wide output format, don't print headers")
	cmd.Flags().StringSliceVarP(&o.Filenames, "filename", "f", nil, "Read CRDs from manifests instead of the cluster: a file, a directory, or - for stdin (repeatable)")
	cmd.Flags().BoolVarP(&o.Recursive, "recursive", "R", false, "Process the directories given with -f recursively")
	cmd.Flags().BoolVar(&o.AllContexts, "all-contexts", false, "Every context of the kubeconfig at once (a fleet view); --context given more than once shows those")
	cmd.Flags().StringSliceVar(&o.Release, "release", nil, "The next step toward these CRD manifests (a release: a file, a directory, or - for stdin), as check -f and upgrade -f plan it")
	return cmd
}

// Complete builds the clients.
func (o *StatusOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Names = args
	var err error
	if o.format, err = parseOutput(o.Output, render.FormatWide); err != nil {
		return err
	}
	if len(o.Filenames) > 0 {
		if len(o.Release) > 0 {
			return errors.New("--release plans from the cluster toward the release: not with -f")
		}
		return nil
	}
	if len(o.Release) > 0 {
		if o.release, err = manifest.ReadCRDs(cmd.Context(), o.Release, o.Recursive, o.In); err != nil {
			return err
		}
		render.WriteWarnings(o.ErrOut, o.release.Warnings)
	}
	o.clients, err = newClients(o.configFlags, false)
	return err
}

// Validate checks the input before anything is sent.
func (o *StatusOptions) Validate() error {
	if _, err := labels.Parse(o.Selector); err != nil {
		return fmt.Errorf("invalid selector %q: %w", o.Selector, err)
	}
	if len(o.Filenames) > 0 && o.format == render.FormatWide {
		return errors.New("-o wide counts objects on a cluster: not with -f")
	}
	return nil
}

// Run lists the CRDs once, assesses them and prints the report.
func (o *StatusOptions) Run(ctx context.Context) error {
	var items []render.StatusItem
	contexts, err := fleetContexts(o.configFlags, o.contexts, o.AllContexts && len(o.Filenames) == 0)
	if err != nil {
		return err
	}
	if len(contexts) > 0 && len(o.Filenames) == 0 {
		o.inFleet = true
		items = o.fleetItems(ctx, contexts)
	} else if items, err = o.items(ctx); err != nil {
		return err
	}
	if len(items) == 0 && len(o.missing) > 0 {
		return o.missing[0]
	}
	if len(items) == 0 && o.format != render.FormatJSON && o.format != render.FormatYAML {
		fmt.Fprintln(o.ErrOut, "No CustomResourceDefinitions found.")
	}
	if err := render.WriteStatus(o.Out, o.format, items, o.NoHeaders); err != nil {
		return err
	}
	if len(o.missing) > 0 {
		for _, err := range o.missing {
			fmt.Fprintf(o.ErrOut, "error: %s\n", render.ErrorMessage(err))
		}
		return errReported
	}
	for _, it := range items {
		if it.Window != nil {
			// A stopped run's step is open: its next step closes it.
			return errAttention
		}
		for _, p := range it.Problems {
			if p.Severity == lifecycle.SeverityError {
				return errAttention
			}
		}
	}
	return nil
}

// items assesses the CRDs of the files, or of the cluster o.clients talk to.
func (o *StatusOptions) items(ctx context.Context) ([]render.StatusItem, error) {
	crds, file, err := o.load(ctx)
	if err != nil {
		return nil, err
	}
	if o.Group != "" {
		crds = slices.DeleteFunc(crds, func(crd *apiextensionsv1.CustomResourceDefinition) bool { return crd.Spec.Group != o.Group })
	}
	items := make([]render.StatusItem, len(crds))
	if file != nil {
		for i, crd := range crds {
			items[i].Assessment = stages.Assess(crd)
			items[i].Next = items[i].Next.InFile(cmp.Or(file.Path(crd.Name), "CRD_MANIFEST"))
		}
		return items, nil
	}
	// The objects are listed before the CRDs are assessed: what they
	// carry can be the next step.
	stale, listed := o.staleManagedFields(ctx, crds)
	for i, crd := range crds {
		items[i].Assessment = stages.AssessWith(crd, stale[i])
	}
	if err := o.towardRelease(ctx, crds, items); err != nil {
		return nil, err
	}
	o.clusterMigrations(ctx, items)
	// A migration pending is seen now: a later migrate on this machine
	// counts its switch grace from here.
	sightings := newSightings(o.configFlags)
	for _, crd := range crds {
		if stages.MigrationPending(crd) {
			sightings.Saw(crd)
		}
	}
	if o.format == render.FormatWide {
		o.count(ctx, crds, items, listed)
	}
	return items, nil
}

// towardRelease makes each CRD's next step the first of the way to the release's CRD of the
// same name, as check and upgrade plan it; a CRD the release lacks keeps its own.
func (o *StatusOptions) towardRelease(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition, items []render.StatusItem) error {
	if o.release == nil {
		return nil
	}
	for i, crd := range crds {
		for _, next := range o.release.CRDs {
			if next.Name != crd.Name {
				continue
			}
			p, err := releaseplan.One(ctx, o.clients.Clients, crd, next, cmp.Or(o.release.Path(next.Name), strings.Join(o.Release, ",")), pass.DefaultPageSize)
			if err != nil {
				return err
			}
			items[i].Next = p.Next()
			items[i].Release = true
		}
	}
	return nil
}

// staleManagedFields lists, a few CRDs at a time, the objects of every CRD
// whose objects may carry managedFields entries at versions it does not
// serve, metadata only, and finds those that do. listed counts each CRD's
// objects where they were all listed, -1 elsewhere. A CRD whose objects
// cannot be listed is said on stderr; the CRDs whose objects the user may
// not list, in one line.
func (o *StatusOptions) staleManagedFields(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition) ([]*lifecycle.StaleManagedFields, []int64) {
	stale, listed := make([]*lifecycle.StaleManagedFields, len(crds)), make([]int64, len(crds))
	errs := make([]error, len(crds))
	var g errgroup.Group
	g.SetLimit(countWorkers)
	for i, crd := range crds {
		listed[i] = -1
		if !stages.MayHaveStaleManagedFields(crd) {
			continue
		}
		g.Go(func() error {
			stale[i], listed[i], errs[i] = cluster.StaleManagedFields(ctx, o.clients.Metadata, crd, pass.DefaultPageSize)
			return nil
		})
	}
	_ = g.Wait()
	var forbidden []string
	for i, err := range errs {
		switch {
		case apierrors.IsForbidden(err):
			forbidden = append(forbidden, crds[i].Name)
		case err != nil:
			fmt.Fprintf(o.ErrOut, "warning: managedFields entries at versions not served are not shown: %v\n", err)
		}
	}
	if len(forbidden) > 0 {
		named := strings.Join(forbidden[:min(len(forbidden), 3)], ", ")
		if len(forbidden) > 3 {
			named += fmt.Sprintf(" and %d more", len(forbidden)-3)
		}
		fmt.Fprintf(o.ErrOut, "warning: managedFields entries at versions not served are not shown for the CRDs whose objects you may not list: %s\n", named)
	}
	return stale, listed
}

// fleetItems assesses every context's CRDs, four clusters at a time, each
// item naming its cluster. A cluster that cannot be read is an item of its
// own with the error, not the end of the others.
func (o *StatusOptions) fleetItems(ctx context.Context, contexts []string) []render.StatusItem {
	return overFleet(contexts, func(name string) []render.StatusItem {
		one := *o
		c, err := newClients(inContext(o.configFlags, name), false)
		var items []render.StatusItem
		if err == nil {
			one.clients = c
			items, err = one.items(ctx)
		}
		if err != nil {
			items = []render.StatusItem{{Assessment: lifecycle.Assessment{Versions: []lifecycle.Version{},
				Problems: []lifecycle.Problem{{Severity: lifecycle.SeverityError, Message: "status could not be read from this cluster: " + render.ErrorMessage(err)}},
				Next:     lifecycle.Next{Action: lifecycle.ActionFix, Reason: "reach the cluster and look again"}}}}
		}
		for j := range items {
			items[j].Cluster = name
			if s := items[j].Next.Step; s != nil {
				items[j].Next.Step = s.On(name)
			}
		}
		return items
	})
}

// clusterMigrations adds each CRD's newest StorageVersionMigration; a
// cluster that does not serve them has none, and one the user may not list
// is said on stderr.
func (o *StatusOptions) clusterMigrations(ctx context.Context, items []render.StatusItem) {
	if len(items) == 0 {
		return
	}
	all, err := cluster.ListClusterMigrations(ctx, o.clients.Migrations)
	if err != nil {
		fmt.Fprintf(o.ErrOut, "warning: the cluster's own storage version migrations are not shown: %v\n", err)
		return
	}
	for i := range items {
		items[i].ClusterMigration = all.For(items[i].Group, items[i].Resource)
	}
}

// count fills in object counts, a few CRDs at a time, where listed has
// none already; a CRD whose count fails keeps a blank and the reason goes
// to stderr.
func (o *StatusOptions) count(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition, items []render.StatusItem, listed []int64) {
	var g errgroup.Group
	g.SetLimit(countWorkers)
	warnings := make([]error, len(crds))
	for i, crd := range crds {
		if listed[i] >= 0 {
			items[i].Objects = &listed[i]
			continue
		}
		g.Go(func() error {
			n, ok, err := cluster.CountObjects(ctx, o.clients.Metadata, crd)
			if ok {
				items[i].Objects = &n
			}
			warnings[i] = err
			return nil
		})
	}
	_ = g.Wait()
	for _, err := range warnings {
		if err != nil {
			fmt.Fprintf(o.ErrOut, "warning: %v\n", err)
		}
	}
}

// load finds the CRDs named (every one for no names) among those of the
// cluster, or of the files with -f, that match the label selector; with
// -f, also where each was read.
func (o *StatusOptions) load(ctx context.Context) ([]*apiextensionsv1.CustomResourceDefinition, *manifest.Found, error) {
	if len(o.Filenames) == 0 {
		all, err := cluster.ListCRDs(ctx, o.clients.CRDs, o.Selector)
		if err != nil {
			return nil, nil, err
		}
		o.clients.own.Know(all)
		crds, err := o.selectFound(all, o.clients.toMapper)
		return crds, nil, err
	}
	found, err := manifest.ReadCRDs(ctx, o.Filenames, o.Recursive, o.In)
	if err != nil {
		return nil, nil, err
	}
	render.WriteWarnings(o.ErrOut, found.Warnings)
	selector, _ := labels.Parse(o.Selector)
	var all []apiextensionsv1.CustomResourceDefinition
	for _, c := range found.CRDs {
		if selector.Matches(labels.Set(c.Labels)) {
			all = append(all, *c)
		}
	}
	crds, err := o.selectFound(all, noDiscovery)
	return crds, found, err
}

// selectFound finds the CRDs named; outside a fleet it goes on past a
// name that finds none, and keeps why for after the CRDs found.
func (o *StatusOptions) selectFound(all []apiextensionsv1.CustomResourceDefinition, discover func() (meta.RESTMapper, error)) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	crds, missing := cluster.SelectFound(all, o.Names, discover)
	if len(missing) > 0 && o.inFleet {
		return nil, missing[0]
	}
	o.missing = missing
	return crds, nil
}
