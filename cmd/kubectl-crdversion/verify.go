package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
)

// VerifyOptions holds what `kubectl crdversion verify` needs.
type VerifyOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	CRD      string
	Versions []string
	Output   string

	format  report.Format
	clients *clients
}

// NewCmdVerify builds `kubectl crdversion verify`.
func NewCmdVerify(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &VerifyOptions{configFlags: flags, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "verify CRD [VERSION ...]",
		Short: "Check that every object round-trips through each served version without loss",
		Long: `For every object of the CRD and every served VERSION (default: all), read it
at VERSION, send it back as a server-side dry-run update at VERSION, and
compare what comes back with what was read. The API server converts it to the
storage version and back on the way, through its real conversion path
(webhook included), so any difference is a lossy conversion. Nothing is
written.

That is VERSION→storage→VERSION. The other direction, storage→VERSION→storage
(what re-storing objects at VERSION makes permanent), the API server shows
only once VERSION is the storage version: verify says how it is known (the
schemas may prove it) or when it is checked (promote --to deprecated, right
after the switch; migrate, before re-storing).

Exit status is 0 when every object round-trips, 3 when some do not.`,
		Example: `  kubectl crdversion verify widgets.example.com
  kubectl crdversion verify widgets.example.com v2 -o json`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeCRDThenVersions(flags, 0),
		RunE:              runE(o),
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: table|json|yaml|name|jsonpath=...|go-template=...")
	completeValues(cmd, "output", "table", "json", "yaml")
	return cmd
}

// Complete builds the clients.
func (o *VerifyOptions) Complete(args []string) error {
	o.CRD, o.Versions = args[0], args[1:]
	var err error
	if o.format, err = report.ParseFormat(o.Output); err != nil {
		return err
	}
	o.clients, err = newClients(o.configFlags)
	return err
}

// Validate checks the flags before anything is sent.
func (o *VerifyOptions) Validate() error {
	if o.format == report.FormatWide || o.format == report.FormatMarkdown {
		return fmt.Errorf("-o %s is not supported here: use json, yaml, name, jsonpath=... or go-template=...", o.format)
	}
	return nil
}

// Run checks every object and reports what did not come back intact.
func (o *VerifyOptions) Run(ctx context.Context) error {
	_, crds, err := o.clients.resolve(ctx, "", o.CRD)
	if err != nil {
		return err
	}
	result, err := runVerify(ctx, o.configFlags, crds[0], o.Versions, o.ErrOut)
	if err != nil {
		return err
	}
	if err := report.WriteVerify(o.Out, o.format, crds[0].Name, result); err != nil {
		return err
	}
	if !result.Passed() {
		return errAttention
	}
	return nil
}

// runVerify runs the check with progress on stderr, as migrate shows it,
// with the pass clients: two requests per object and version, which
// kubectl's usual client-side limit would cap at 25 objects/s.
func runVerify(ctx context.Context, flags *genericclioptions.ConfigFlags, crd *apiextensionsv1.CustomResourceDefinition, versions []string, progress io.Writer) (*migrate.VerifyResult, error) {
	c, err := passClients(flags)
	if err != nil {
		return nil, err
	}
	bar := report.NewProgress(progress, "verify "+crd.Name, isTerminal(progress), false)
	defer bar.Finish()
	r, err := migrate.Verify(ctx, c.Dynamic, c.Metadata, crd, migrate.VerifyOptions{Versions: versions, Progress: bar.Update})
	if err != nil {
		return nil, fmt.Errorf("verifying %s through %s: %w", crd.Name, strings.Join(versions, ","), err)
	}
	return r, nil
}
