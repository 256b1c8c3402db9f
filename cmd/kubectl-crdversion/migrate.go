package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// MigrateOptions holds what `kubectl crdversion migrate` needs.
type MigrateOptions struct {
	migrationOptions
	All                bool
	Groups             []string
	Prune              bool
	FailuresFile       string
	CleanManagedFields bool
	CleanVersions      []string
	Via                string
	fleetFlags
}

// The two ways to re-store objects.
const (
	viaPlugin  = "plugin"
	viaCluster = "cluster"
)

// NewCmdMigrate builds `kubectl crdversion migrate`.
func NewCmdMigrate(flags *genericclioptions.ConfigFlags, contexts *contextsFlag, streams genericiooptions.IOStreams) *cobra.Command {
	o := &MigrateOptions{migrationOptions: migrationOptions{configFlags: flags, IOStreams: streams}}
	cmd := &cobra.Command{
		Use:   "migrate CRD ... | --all",
		Short: "Re-store every object at the storage version, then prune storedVersions when proven safe",
		Long: `Re-store every object of the CRDs at their storage version, then prune
status.storedVersions down to it — only when that is proven safe.

It waits until the storage switch is in effect (discovery's storageVersionHash),
proves a conversion webhook answers, then writes every object back unchanged
(an empty patch: etcd is written only where the object was stored at another
version) with an adaptive pool of workers, listing a page at a time. Unless
the schemas prove old→new→old for every object, each object is checked first,
as it is written: a server-side dry run at the old version, then the write at
the resourceVersion checked. An object that would lose data is left as it is.
NotFound counts as done; every other failure is recorded and the run goes on;
writing stops if conversions start failing. Writes begun before the switch may
land at the old version for --switch-grace after it: the prune waits that out
(counted from when this machine first saw the switch) and re-stores once more.
storedVersions is pruned, through /status with a resourceVersion precondition,
only after zero failures and only if the CRD's storage version, generation and
storedVersions did not change.

With --via=cluster the cluster's own storage version migrator
(storagemigration.k8s.io/v1, kube-controller-manager, Kubernetes 1.37+) re-stores
the objects instead, after the same checks: a StorageVersionMigration is created
(or the running one followed) and its conditions followed to the end. It reports
no count and no failed object, and prunes storedVersions itself when it
succeeds (1.36+); where it does not, the same guarded prune follows.

On a fleet (--context given more than once, in that order, or --all-contexts,
the current context first) the first cluster is a canary: it runs alone, and
the rest only once it is done, --parallel at a time. Once a cluster is not
done (refused, failed, not pruned, unreachable), no further cluster is
written; the table at the end says, per cluster, what was done and why not.

Exit status is 3 when an object failed or would lose data, the cluster's
migration failed, storedVersions could not be pruned, or (on a fleet) any
cluster is not done.`,
		Example: `  # Right after a helm upgrade that switched the storage version
  kubectl crdversion migrate certificates.pki.example.com

  # Every CRD with a migration pending; failures as JSON lines
  kubectl crdversion migrate --all --failures-file failures.jsonl

  # Every CRD of these groups with a migration pending
  kubectl crdversion migrate --all --group pki.example.com --group example.com

  # Let the cluster's own migrator do the writing, and follow it
  kubectl crdversion migrate certificates.pki.example.com --via=cluster

  # Every cluster of the kubeconfig: the current one first, as a canary
  kubectl crdversion migrate --all --all-contexts

  # A canary, then two production clusters side by side
  kubectl crdversion migrate widgets.example.com --context staging --context prod-eu --context prod-us --parallel 2

  # Preflight: which objects would the new storage version reject? (writes nothing)
  kubectl crdversion migrate widgets.example.com --dry-run=server`,
		ValidArgsFunction: completeCRDNames(flags),
		RunE:              runE(o),
	}
	o.addFlags(cmd, `"none" or "server": every write sent with dryRun=All, listing each object the storage version's schema or admission would reject; nothing is written`)
	cmd.Flags().BoolVar(&o.All, "all", false, "Every CRD whose storedVersions holds more than the storage version")
	cmd.Flags().StringArrayVar(&o.Groups, "group", nil, "With --all: only CRDs of this API group (repeatable)")
	cmd.Flags().BoolVar(&o.Prune, "prune", true, "Prune status.storedVersions to the storage version when every object is re-stored")
	cmd.Flags().StringVar(&o.FailuresFile, "failures-file", "", "Write every failed object as a JSON line to this file")
	cmd.Flags().StringVar(&o.Via, "via", viaPlugin, `Who re-stores the objects: "plugin" (this command's own pass, with a report of every object) or "cluster" (a StorageVersionMigration for kube-controller-manager's migrator, followed to the end)`)
	completeValues(cmd, "via", viaPlugin, viaCluster)
	o.addFleetFlags(cmd, contexts, "Migrate")
	cmd.Flags().BoolVar(&o.CleanManagedFields, "clean-managed-fields", false, "Also drop managedFields entries recorded at versions no longer served (they break server-side apply once the version is removed)")
	cmd.Flags().StringSliceVar(&o.CleanVersions, "clean-managed-fields-of", nil, "Also move the entries recorded at these served versions to the storage version (versions a release about to be applied removes; implies --clean-managed-fields)")
	return cmd
}

// Validate checks the flags before anything is sent.
func (o *MigrateOptions) Validate() error {
	switch {
	case o.All == (len(o.Names) > 0):
		return errors.New("name the CRDs to migrate, or pass --all (not both)")
	case len(o.Groups) > 0 && !o.All:
		// A named CRD outside the groups would be dropped without a word.
		return errors.New("--group goes with --all: name the CRDs, or pass --all --group G")
	case o.Via != viaPlugin && o.Via != viaCluster:
		return fmt.Errorf(`--via must be "plugin" or "cluster", not %q`, o.Via)
	case o.Via == viaCluster && o.cleaning():
		return errors.New("--clean-managed-fields needs the plugin's own pass: not with --via=cluster")
	case o.Via == viaCluster && !o.Prune:
		return errors.New("--prune=false is not possible with --via=cluster: the cluster's migrator prunes storedVersions itself when it succeeds")
	}
	if err := o.fleetFlags.validate(); err != nil {
		return err
	}
	return o.migrationOptions.Validate()
}

// Run migrates the CRDs one after the other, on one cluster or a fleet.
func (o *MigrateOptions) Run(ctx context.Context) error {
	contexts, err := o.clusters(o.configFlags)
	if err != nil {
		return err
	}
	if len(contexts) > 0 {
		return o.runFleet(ctx, contexts)
	}
	if err := o.connect(); err != nil {
		return err
	}
	crds, err := o.targets(ctx)
	if err != nil {
		return err
	}
	if len(crds) == 0 {
		// As kubectl get: with nothing to report, a document says so
		// (an empty report) and the sentence is for people only.
		switch {
		case o.format.Document():
			return render.WriteMigrate(o.Out, o.format, nil, false)
		case o.cleaning():
			fmt.Fprintln(o.ErrOut, "No CustomResourceDefinitions with a migration pending or managedFields entries of unserved versions.")
		default:
			fmt.Fprintln(o.ErrOut, "No CustomResourceDefinitions with a migration pending.")
		}
		return nil
	}
	failures, closeFailures, err := o.failuresSink()
	if err != nil {
		return err
	}
	defer closeFailures()
	return o.run(ctx, crds, o.pruning(), o.migration(failures))
}

// cleaning says whether managedFields entries are cleaned too.
func (o *MigrateOptions) cleaning() bool { return o.CleanManagedFields || len(o.CleanVersions) > 0 }

// pruning: storedVersions is pruned where the flags ask and it is no dry
// run.
func (o *MigrateOptions) pruning() bool { return o.Prune && o.dryRun == migration.DryRunNone }

// migration is the library's migration of one CRD, as the flags ask.
func (o *MigrateOptions) migration(failures func(cluster, crd string, f results.Failure)) migrateOne {
	return func(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, opts migration.Options) (*results.Result, error) {
		opts.CleanManagedFields, opts.CleanVersions = o.cleaning(), o.CleanVersions
		opts.Restore.OnFailure = func(f results.Failure) { failures(o.cluster, crd.Name, f) }
		if o.Via == viaCluster {
			return migration.MigrateViaCluster(ctx, migration.Clients{Clients: o.clients}, crd.Name, opts)
		}
		return migration.Migrate(ctx, migration.Clients{Clients: o.clients}, crd.Name, opts)
	}
}

// targets are the named CRDs, or with --all every CRD with a migration
// pending (of the --group groups, when given).
func (o *MigrateOptions) targets(ctx context.Context) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := o.list.selectCRDs(ctx, "", o.Names...)
	if err != nil {
		return nil, err
	}
	// Other groups are not this run's: a Job whose role grants only its
	// groups' objects is not refused over another chart's CRD.
	if len(o.Groups) > 0 {
		crds = slices.DeleteFunc(crds, func(crd *apiextensionsv1.CustomResourceDefinition) bool {
			return !slices.Contains(o.Groups, crd.Spec.Group)
		})
	}
	// Seen now, every switch grace is counted from now, not from when each
	// CRD's turn comes: the waits of many CRDs overlap.
	for _, crd := range crds {
		if stages.MigrationPending(crd) {
			o.sightings.Saw(crd)
		}
	}
	if !o.All {
		return crds, nil
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range crds {
		take := stages.MigrationPending(crd)
		// Entries of versions no longer served outlive the prune: only the
		// objects show them.
		if !take && o.cleaning() {
			if take, err = cluster.HasStaleEntries(ctx, o.list.Metadata, crd, o.PageSize); err != nil {
				return nil, err
			}
		}
		if take {
			out = append(out, crd)
		}
	}
	return out, nil
}

// failuresSink writes failures as JSON lines to --failures-file.
func (o *MigrateOptions) failuresSink() (func(string, string, results.Failure), func(), error) {
	if o.FailuresFile == "" {
		return func(string, string, results.Failure) {}, func() {}, nil
	}
	f, err := os.Create(o.FailuresFile)
	if err != nil {
		return nil, nil, err
	}
	return render.FailuresFile(f), func() { _ = f.Close() }, nil
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalWidth is the columns of the terminal w writes to, or 0: not a
// terminal (a pipe, a file), or one that reports no width.
func terminalWidth(w any) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}
