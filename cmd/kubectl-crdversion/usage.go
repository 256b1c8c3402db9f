package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/auditlog"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/usagereport"
)

// UsageOptions holds what `kubectl crdversion usage` needs.
type UsageOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	Names    []string
	Output   string
	PageSize int64
	// AuditLogs are the audit logs read for CLIENTS: files, folders, "-".
	AuditLogs []string

	format  render.Format
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
  CLIENTS    with --audit-log: every client that requested the version in
             the API server's audit log (a file, a folder of rotated files,
             gzip'd or not, or - for stdin; EKS, AKS and GKE exports read
             too): user (a ServiceAccount as namespace/name), user agent,
             verbs, requests, first and last seen; this plugin's own
             requests apart. The window the log covers is stated; the audit
             policy must log these resources at level Metadata or above,
             reads included.

Clients that only read, or that wrote another version since, do not show in
MANAGERS: no use shown is not proof of no use. Nothing is changed.

Exit status: 0 no deprecated or unserved version shows use, 3 some does (look
before blocking or removing it), 1 the command failed (an --audit-log that
is not an audit log included).`,
		Example: `  # Before promoting v1beta1's successor to blocked
  kubectl crdversion usage widgets.example.com

  # As a document for scripts
  kubectl crdversion usage widgets.example.com gadgets.example.com -o json

  # Who requested each version, by name, from the API server's audit logs
  kubectl crdversion usage widgets.example.com --audit-log /var/log/kubernetes/audit/`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeCRDNames(flags),
		RunE:              runE(o),
	}
	addOutputFlag(cmd, &o.Output)
	cmd.Flags().Int64Var(&o.PageSize, "page-size", pass.DefaultPageSize, "Objects listed per request")
	cmd.Flags().StringArrayVar(&o.AuditLogs, "audit-log", nil, "An API server audit log to read the clients of each version from: a file, a folder of rotated files (gzip'd or not), or - for stdin; repeatable")
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
	case len(slices.DeleteFunc(slices.Clone(o.AuditLogs), func(p string) bool { return p != "-" })) > 1:
		return errors.New("--audit-log - names stdin more than once")
	}
	// A path that is not there fails before the cluster is asked.
	for _, p := range o.AuditLogs {
		if p == "-" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("--audit-log: %w", err)
		}
	}
	return nil
}

// Run reads the metric and the managers and reports them.
func (o *UsageOptions) Run(ctx context.Context) error {
	crds, err := o.clients.selectCRDs(ctx, "", o.Names...)
	if err != nil {
		return err
	}
	var log *auditlog.Result
	if len(o.AuditLogs) > 0 {
		resources := make([]schema.GroupResource, len(crds))
		for i, crd := range crds {
			resources[i] = schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
		}
		if log, err = auditlog.Read(ctx, o.AuditLogs, auditlog.Options{Resources: resources, Stdin: o.In}); err != nil {
			return fmt.Errorf("--audit-log: %w", err)
		}
		for _, w := range log.Warnings {
			fmt.Fprintf(o.ErrOut, "warning: %s\n", render.Printable(w))
		}
	}
	res, err := usage.Read(ctx, o.metrics, o.clients.Metadata, crds, o.PageSize, ownRecords(o.configFlags))
	if err != nil {
		return err
	}
	r := usagereport.FromAudit(res, log)
	if err := render.WriteUsage(o.Out, o.format, r); err != nil {
		return err
	}
	if r.Attention > 0 {
		return errAttention
	}
	return nil
}
