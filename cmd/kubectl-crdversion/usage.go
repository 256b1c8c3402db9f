package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/usagereport"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
)

// UsageOptions holds what `kubectl crdversion usage` needs.
type UsageOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	Names    []string
	Output   string
	PageSize int64

	format  report.Format
	clients *clients
	metrics rest.Interface
}

// NewCmdUsage builds `kubectl crdversion usage`.
func NewCmdUsage(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &UsageOptions{configFlags: flags, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "usage CRD [CRD ...]",
		Short: "Show who still uses each version, before it is blocked or removed",
		Long: `Show, for every version of the named CRDs, who still uses it:

  REQUESTED  the API server's apiserver_requested_deprecated_apis metric, read
             from /metrics (needs get on the nonResourceURL /metrics): whether
             any request reached the version while it was deprecated, since
             that API server started, on that API server only. Versions not
             deprecated are not counted. The metric names no client: where
             this machine recorded that every such request was this plugin's
             own (verify, promote and migrate read the old version; each
             records the server's request count, from /metrics, when it grew
             by exactly its own), it says "only this plugin's own" and asks
             no attention; a request since by anyone does.
  MANAGERS   the field managers whose last write to an object used the
             version (managedFields, from a paged metadata-only list), with
             the operation and the number of objects; system managers (the
             controller manager, garbage collector, storage version migrator
             and this plugin) are left out.

Clients that only read, or that wrote another version since, do not show in
MANAGERS: no use shown is not proof of no use. Nothing is changed.

Exit status: 0 no deprecated or unserved version shows use, 3 some does (look
before blocking or removing it), 1 the command failed.`,
		Example: `  # Before promoting v1beta1's successor to blocked
  kubectl crdversion usage widgets.example.com

  # As a document for scripts
  kubectl crdversion usage widgets.example.com gadgets.example.com -o json`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeCRDNames(flags),
		RunE:              runE(o),
	}
	addOutputFlag(cmd, &o.Output)
	cmd.Flags().Int64Var(&o.PageSize, "page-size", pass.DefaultPageSize, "Objects listed per request")
	return cmd
}

// Complete builds the clients: /metrics is read through discovery's client,
// which addresses the server root rather than an API group.
func (o *UsageOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Names = args
	var err error
	if o.format, err = parseOutput(o.Output); err != nil {
		return err
	}
	if o.clients, err = newClients(o.configFlags, false); err != nil {
		return err
	}
	cfg, err := restConfig(o.configFlags)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	o.metrics = dc.RESTClient()
	return nil
}

// Validate checks the flags before anything is sent.
func (o *UsageOptions) Validate() error {
	switch {
	case o.PageSize < 1:
		return errors.New("--page-size must be at least 1")
	}
	return nil
}

// Run reads the metric and the managers and reports them.
func (o *UsageOptions) Run(ctx context.Context) error {
	crds, err := o.clients.selectCRDs(ctx, "", o.Names...)
	if err != nil {
		return err
	}
	res, err := usage.Read(ctx, o.metrics, o.clients.Metadata, crds, o.PageSize, ownRecords(o.configFlags))
	if err != nil {
		return err
	}
	r := usagereport.From(res)
	if err := report.WriteUsage(o.Out, o.format, r); err != nil {
		return err
	}
	if r.Attention > 0 {
		return errAttention
	}
	return nil
}
