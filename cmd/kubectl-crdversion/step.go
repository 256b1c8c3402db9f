package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
)

// stepOptions is what promote and rollback share: one CRD, one lifecycle
// step planned from a fresh read, written with optimistic concurrency.
type stepOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	CRD     string
	Version string
	DryRun  string
	Output  string

	dryRun  migrate.DryRun
	format  report.Format
	clients *clients
}

func (o *stepOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.DryRun, "dry-run", "none", `"none", "client" (print the plan, send nothing) or "server" (the API server validates the change, nothing is persisted)`)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json|yaml prints the resulting CRD")
}

func (o *stepOptions) complete(args []string) error {
	o.CRD = args[0]
	if len(args) > 1 {
		o.Version = args[1]
	}
	var err error
	if o.dryRun, err = migrate.ParseDryRun(o.DryRun); err != nil {
		return err
	}
	if o.format, err = report.ParseFormat(o.Output); err != nil {
		return err
	}
	if o.format == report.FormatWide {
		return fmt.Errorf("-o wide is not supported here: use json or yaml")
	}
	o.clients, err = newClients(o.configFlags)
	return err
}

// target resolves the CRD argument to a CRD name.
func (o *stepOptions) target(ctx context.Context) (*apiextensionsv1.CustomResourceDefinition, error) {
	_, crds, err := o.clients.resolve(ctx, "", o.CRD)
	if err != nil {
		return nil, err
	}
	return crds[0], nil
}

// apply runs the step and reports it: the plan for people (or the CRD for
// scripts), a warning when a GitOps tool owns spec.versions, and a note
// when a concurrent change made it re-plan.
func (o *stepOptions) apply(ctx context.Context, name string, plan migrate.Planner) error {
	res, err := migrate.ApplyStep(ctx, o.clients.crds, name, o.dryRun, plan)
	if err != nil {
		return err
	}
	if res.Replans > 0 {
		fmt.Fprintf(o.ErrOut, "warning: %s changed while this step was planned; re-planned %d time(s) against the change\n", name, res.Replans)
	}
	if w := lifecycle.OwnersWarning(lifecycle.VersionsOwners(res.Before, migrate.FieldManager)); w != "" {
		fmt.Fprintf(o.ErrOut, "warning: %s\n", w)
	}
	how := map[migrate.DryRun]string{migrate.DryRunNone: "applied", migrate.DryRunClient: "dry run: nothing sent", migrate.DryRunServer: "server dry run: validated, not persisted"}[o.dryRun]
	if o.format == report.FormatJSON || o.format == report.FormatYAML {
		if err := report.WritePlan(o.ErrOut, res.Plan, how); err != nil {
			return err
		}
		return report.WriteCRD(o.Out, o.format, res.After)
	}
	return report.WritePlan(o.Out, res.Plan, how)
}
