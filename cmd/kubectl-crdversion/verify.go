package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
)

// VerifyOptions holds what `kubectl crdversion verify` needs.
type VerifyOptions struct {
	clusterTarget

	CRD         string
	Versions    []string
	Output      string
	Concurrency int
	Gentle      bool
}

// NewCmdVerify builds `kubectl crdversion verify`.
func NewCmdVerify(flags *genericclioptions.ConfigFlags, contexts *contextsFlag, streams genericiooptions.IOStreams) *cobra.Command {
	o := &VerifyOptions{clusterTarget: clusterTarget{configFlags: flags, IOStreams: streams}}
	cmd := &cobra.Command{
		Use:   "verify CRD [VERSION ...]",
		Short: "Check that every object round-trips through each served version without loss",
		Long: `For every served VERSION of the CRD (default: all) and every object, list it
at VERSION (a page at a time), send it back as a server-side dry-run update at VERSION, and
compare what comes back with what was listed. The API server converts it to the
storage version and back on the way, through its real conversion path
(webhook included), so any difference is a lossy conversion. No object is
written; a passed check of a version is recorded on the CRD (an annotation),
and promote --to bridge takes it instead of checking again while neither the
CRD nor any object changed.

That is VERSION→storage→VERSION. The other direction, storage→VERSION→storage
(what re-storing objects at VERSION makes permanent), the API server shows
only once VERSION is the storage version: verify says how it is known (the
schemas may prove it) or when it is checked (promote --to deprecated, right
after the switch; migrate, before re-storing).

On a fleet (--context given more than once, or --all-contexts) the first
cluster is a canary: the rest are checked only once it passes, and none after
a cluster that does not.

Exit status is 0 when every object round-trips, 3 when some do not.`,
		Example: `  kubectl crdversion verify widgets.example.com
  kubectl crdversion verify widgets.example.com v2 -o json

  # Staging first, then every production cluster two at a time
  kubectl crdversion verify widgets.example.com --context staging --context prod-eu --context prod-us --parallel 2`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeCRDThenVersions(flags, 0),
		RunE:              runE(o),
	}
	addOutputFlag(cmd, &o.Output)
	cmd.Flags().IntVar(&o.Concurrency, "concurrency", verify.DefaultConcurrency, "Most checks in flight: the check adapts below it to what the API server takes")
	cmd.Flags().BoolVar(&o.Gentle, "gentle", false, "Pace the checks so the API server's tail latency stays close to what it was when idle (slower)")
	o.oneConnection.addFlag(cmd)
	o.addFleetFlags(cmd, contexts, "Verify")
	return cmd
}

// Complete reads the flags and, for one cluster, builds the clients.
func (o *VerifyOptions) Complete(cmd *cobra.Command, args []string) error {
	o.CRD, o.Versions = args[0], args[1:]
	var err error
	if o.format, err = parseOutput(o.Output); err != nil {
		return err
	}
	return o.aim()
}

// Validate checks the flags before anything is sent.
func (o *VerifyOptions) Validate() error {
	switch {
	case o.Concurrency < 1 || o.Concurrency > verify.MaxConcurrency:
		return fmt.Errorf("--concurrency must be between 1 and %d, not %d", verify.MaxConcurrency, o.Concurrency)
	}
	return o.fleetFlags.validate()
}

// Run checks every object and reports what did not come back intact, on
// one cluster or each of a fleet.
func (o *VerifyOptions) Run(ctx context.Context) error {
	if len(o.fleet) > 0 {
		return o.onFleet(ctx, func(ctx context.Context, aimed clusterTarget) error {
			one := *o
			one.clusterTarget = aimed
			return one.Run(ctx)
		})
	}
	crds, err := o.clients.selectCRDs(ctx, "", o.CRD)
	if err != nil {
		return err
	}
	bar := newTaskBars(o.ErrOut, isTerminal(o.ErrOut))
	result, err := verify.Verify(ctx, o.clients.Clients, crds[0], verify.Options{Versions: o.Versions, Concurrency: o.Concurrency, Gentle: o.Gentle, Record: true, Progress: bar.Update})
	bar.Finish()
	if err != nil {
		return fmt.Errorf("verifying %s through %s: %w", crds[0].Name, strings.Join(o.Versions, ","), err)
	}
	if err := render.WriteVerify(o.Out, o.format, crds[0].Name, result); err != nil {
		return err
	}
	if !result.Passed() {
		return errAttention
	}
	return nil
}
