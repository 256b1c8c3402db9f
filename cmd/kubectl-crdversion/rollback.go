package main

import (
	"context"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// RollbackOptions holds what `kubectl crdversion rollback` needs.
type RollbackOptions struct{ stepOptions }

// NewCmdRollback builds `kubectl crdversion rollback`.
func NewCmdRollback(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RollbackOptions{stepOptions{configFlags: flags, IOStreams: streams}}
	cmd := &cobra.Command{
		Use:   "rollback CRD [VERSION]",
		Short: "Move the version in flight one stage back",
		Long: `Move the CRD's version in flight (or VERSION) one stage back: deprecated →
bridge makes the old version the storage version again, blocked → deprecated
serves it again, bridge → introduced drops the verification, introduced
removes the new version. Objects written at the newer version meanwhile stay
stored at it until ` + "`kubectl crdversion migrate`" + ` re-stores them. A removed
version cannot be rolled back: its schema is gone.`,
		Example: `  kubectl crdversion rollback widgets.example.com --dry-run=server
  kubectl crdversion rollback -f deploy/crds/widgets.yaml`,
		Args:              cobra.RangeArgs(0, 2),
		ValidArgsFunction: completeCRDThenVersions(flags, 2),
		RunE:              runE(o),
	}
	o.addFlags(cmd)
	return cmd
}

// Run plans the step back from a fresh read and applies it.
func (o *RollbackOptions) Run(ctx context.Context) error {
	return o.run(ctx, func(crd *apiextensionsv1.CustomResourceDefinition, version string) (*lifecycle.Plan, error) {
		return lifecycle.PlanRollback(crd, version)
	})
}
