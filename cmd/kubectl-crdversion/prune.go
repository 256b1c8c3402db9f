package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// PruneOptions holds what `kubectl crdversion prune` needs.
type PruneOptions struct {
	migrationOptions
	IHaveMigrated bool
}

// NewCmdPrune builds `kubectl crdversion prune`.
func NewCmdPrune(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &PruneOptions{migrationOptions: migrationOptions{configFlags: flags, IOStreams: streams}}
	cmd := &cobra.Command{
		Use:   "prune CRD",
		Short: "Prune status.storedVersions to the storage version, once proven safe",
		Long: `Prune status.storedVersions of a CRD migrated by other means down to its
storage version. The API server cannot tell which version each object is
stored at, so prune first proves it with a re-encoding pass of its own: every
object is written back unchanged (an object already at the storage version
costs a round trip and no write), then storedVersions is pruned under the same
checks as migrate. --i-have-migrated skips the pass on your word.`,
		Example: `  kubectl crdversion prune widgets.example.com
  kubectl crdversion prune widgets.example.com --i-have-migrated`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeOneCRD(flags),
		RunE:              runE(o),
	}
	cmd.Flags().BoolVar(&o.IHaveMigrated, "i-have-migrated", false, "Skip the proof: prune because you say every object is stored at the storage version")
	o.addFlags(cmd, `"none" or "server": the proof pass is sent with dryRun=All (it shows the objects the API server would refuse; nothing is re-stored, so nothing is proven and no prune is sent); with --i-have-migrated the prune itself is sent with dryRun=All`)
	return cmd
}

// Run proves and prunes, or prunes on your word.
func (o *PruneOptions) Run(ctx context.Context) error {
	if err := o.connect(); err != nil {
		return err
	}
	crds, err := o.list.selectCRDs(ctx, "", o.Names...)
	if err != nil {
		return err
	}
	if !o.IHaveMigrated {
		return o.run(ctx, crds, o.dryRun == migration.DryRunNone, func(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, opts migration.Options) (*results.Result, error) {
			return migration.Migrate(ctx, migration.Clients{Clients: o.clients}, crd.Name, opts)
		})
	}
	return o.run(ctx, crds, o.dryRun == migration.DryRunNone, func(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, opts migration.Options) (*results.Result, error) {
		fmt.Fprintln(o.ErrOut, pruneOnYourWord(crd.Name, stages.StorageVersion(crd)))
		return migration.PruneUnproven(ctx, migration.Clients{Clients: o.clients}, crd.Name, opts)
	})
}
