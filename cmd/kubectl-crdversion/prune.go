package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
)

// PruneOptions holds what `kubectl crdversion prune` needs.
type PruneOptions struct {
	MigrateOptions
	IHaveMigrated bool
}

// NewCmdPrune builds `kubectl crdversion prune`.
func NewCmdPrune(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &PruneOptions{MigrateOptions: MigrateOptions{configFlags: flags, IOStreams: streams, Prune: true}}
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
	o.addPassFlags(cmd, `"none" or "server": the proof pass is sent with dryRun=All (it shows the objects the API server would refuse; nothing is re-stored, so nothing is proven and no prune is sent); with --i-have-migrated the prune itself is sent with dryRun=All`)
	return cmd
}

// Run proves and prunes, or prunes on your word.
func (o *PruneOptions) Run(ctx context.Context) error {
	if o.IHaveMigrated {
		return o.pruneOnYourWord(ctx)
	}
	return o.MigrateOptions.Run(ctx)
}

// pruneOnYourWord prunes without a pass, under the same checks of the CRD,
// once the storage switch is in effect.
func (o *PruneOptions) pruneOnYourWord(ctx context.Context) error {
	crds, err := o.targets(ctx)
	if err != nil {
		return err
	}
	crd, err := o.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crds[0].Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	storage := lifecycle.StorageVersion(crd)
	fmt.Fprintf(o.ErrOut, "warning: pruning %s on your word, without proof: any object still stored at a version other than %s becomes unreadable once that version is removed\n", crd.Name, storage)
	if err := migrate.WaitForSwitch(ctx, o.clients.Discovery, o.clients.FreshDiscovery, crd, o.WaitTimeout); err != nil {
		return err
	}
	res := &migrate.Result{CRD: crd.Name, Storage: storage, StoredVersions: crd.Status.StoredVersions}
	pr, err := migrate.Prune(ctx, o.clients.CRDs, crd, migrate.PruneOptions{DryRun: o.dryRun})
	if err != nil {
		return err
	}
	res.Pruned, res.PruneReason, res.StoredVersionsAfter = pr.Pruned, pr.Reason, pr.StoredVersionsAfter
	if !pr.Pruned {
		res.PruneSkipped = pr.Message
	}
	if err := report.WriteMigrate(o.Out, o.format, []*migrate.Result{res}, o.dryRun == migrate.DryRunServer); err != nil {
		return err
	}
	if res.NeedsAttention(o.dryRun == migrate.DryRunNone) {
		return errAttention
	}
	return nil
}
