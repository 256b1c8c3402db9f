package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
)

// MigrateOptions holds what `kubectl crdversion migrate` needs.
type MigrateOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	Names              []string
	All                bool
	Concurrency        int
	PageSize           int64
	QPS                float32
	Burst              int
	DryRun             string
	Prune              bool
	Force              bool
	FailuresFile       string
	Quiet              bool
	Output             string
	WaitTimeout        time.Duration
	SwitchGrace        time.Duration
	CleanManagedFields bool
	AcceptLoss         bool

	dryRun  migrate.DryRun
	format  report.Format
	clients migrate.Clients
	list    *clients
}

// NewCmdMigrate builds `kubectl crdversion migrate`.
func NewCmdMigrate(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &MigrateOptions{configFlags: flags, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "migrate CRD ... | --all",
		Short: "Re-store every object at the storage version, then prune storedVersions when proven safe",
		Long: `Re-store every object of the CRDs at their storage version, then prune
status.storedVersions down to it — only when that is proven safe.

It waits until the storage switch is in effect (discovery's storageVersionHash),
proves a conversion webhook answers, then writes every object back unchanged
(an empty patch: etcd is written only where the object was stored at another
version) with a bounded pool of workers, listing a page at a time. Conflict and
NotFound count as done; every other failure is recorded and the run goes on;
writing stops if conversions start failing. storedVersions is pruned, through
/status with a resourceVersion precondition, only after zero failures and only
if the CRD's storage version, generation and storedVersions did not change.

Exit status is 3 when an object failed or storedVersions could not be pruned.`,
		Example: `  # Right after a helm upgrade that switched the storage version
  kubectl crdversion migrate certificates.pki.example.com

  # Every CRD with a migration pending; failures as JSON lines
  kubectl crdversion migrate --all --failures-file failures.jsonl

  # Preflight: which objects would the new storage version reject? (writes nothing)
  kubectl crdversion migrate widgets.example.com --dry-run=server`,
		ValidArgsFunction: completeCRDNames(flags),
		RunE:              runE(o),
	}
	o.addPassFlags(cmd, `"none" or "server": every write sent with dryRun=All, listing each object the storage version's schema or admission would reject; nothing is written`)
	cmd.Flags().BoolVar(&o.All, "all", false, "Every CRD whose storedVersions holds more than the storage version")
	cmd.Flags().BoolVar(&o.Prune, "prune", true, "Prune status.storedVersions to the storage version when every object is re-stored")
	cmd.Flags().StringVar(&o.FailuresFile, "failures-file", "", "Write every failed object as a JSON line to this file")
	cmd.Flags().BoolVar(&o.CleanManagedFields, "clean-managed-fields", false, "Also drop managedFields entries recorded at versions no longer served (they break server-side apply once the version is removed)")
	return cmd
}

// addPassFlags adds the flags of a pass over objects, which migrate and
// prune share.
func (o *MigrateOptions) addPassFlags(cmd *cobra.Command, dryRunHelp string) {
	cmd.Flags().IntVar(&o.Concurrency, "concurrency", migrate.DefaultConcurrency, "Objects written at once")
	cmd.Flags().Int64Var(&o.PageSize, "page-size", migrate.DefaultPageSize, "Objects listed per request")
	cmd.Flags().Float32Var(&o.QPS, "qps", 1000, "Client-side requests per second (client-go's default of 5 would cap a migration at 5 objects/s)")
	cmd.Flags().IntVar(&o.Burst, "burst", 1000, "Client-side burst of requests")
	cmd.Flags().StringVar(&o.DryRun, "dry-run", "none", dryRunHelp)
	cmd.Flags().BoolVar(&o.Force, "force", false, "Go ahead although the CRD reports StorageMigrating=True (the cluster's own migrator at work)")
	cmd.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "No progress on stderr")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: table|json|yaml|name|jsonpath=...|go-template=...")
	cmd.Flags().DurationVar(&o.WaitTimeout, "wait-timeout", migrate.DefaultSwitchTimeout, "How long to wait for a storage version switch to take effect")
	cmd.Flags().DurationVar(&o.SwitchGrace, "switch-grace", migrate.DefaultSwitchGrace, "How long after a storage switch a write begun before it may still land at the old version (twice the API server's request timeout); the prune waits it out and re-stores once more. 0: no wait")
	cmd.Flags().BoolVar(&o.AcceptLoss, "accept-loss", false, "Re-store objects stored at an old version even when old→new→old is not proven lossless (or loses data)")
	completeValues(cmd, "dry-run", "none", "server")
	completeValues(cmd, "output", "table", "json", "yaml")
}

// Complete builds clients with the rate limit asked for.
func (o *MigrateOptions) Complete(args []string) error {
	o.Names = args
	var err error
	if o.dryRun, err = migrate.ParseDryRun(o.DryRun); err != nil {
		return err
	}
	if o.format, err = report.ParseFormat(o.Output); err != nil {
		return err
	}
	if o.list, err = newClients(o.configFlags); err != nil {
		return err
	}
	cfg, err := restConfig(o.configFlags)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	o.clients, err = migrate.NewClients(cfg)
	return err
}

// Validate checks the flags before anything is sent.
func (o *MigrateOptions) Validate() error {
	switch {
	case o.All == (len(o.Names) > 0):
		return errors.New("name the CRDs to migrate, or pass --all (not both)")
	case o.dryRun == migrate.DryRunClient:
		return errors.New(`--dry-run=client would show nothing: use "server" to have the API server check every write`)
	case o.Concurrency < 1 || o.PageSize < 1:
		return errors.New("--concurrency and --page-size must be at least 1")
	case o.format == report.FormatWide || o.format == report.FormatMarkdown:
		return fmt.Errorf("-o %s is not supported here: use json, yaml, name, jsonpath=... or go-template=...", o.format)
	}
	return nil
}

// Run migrates the CRDs one after the other.
func (o *MigrateOptions) Run(ctx context.Context) error {
	crds, err := o.targets(ctx)
	if err != nil {
		return err
	}
	if len(crds) == 0 {
		fmt.Fprintln(o.ErrOut, "No CustomResourceDefinitions with a migration pending.")
		return nil
	}
	failures, closeFailures, err := o.failuresSink()
	if err != nil {
		return err
	}
	defer closeFailures()
	var results []*migrate.Result
	attention := false
	for i, crd := range crds {
		if ctx.Err() != nil {
			names := make([]string, 0, len(crds)-i)
			for _, c := range crds[i:] {
				names = append(names, c.Name)
			}
			fmt.Fprintf(o.ErrOut, "interrupted: not migrated: %s\n", strings.Join(names, ", "))
			attention = true
			break
		}
		res, err := o.migrateOne(ctx, crd, failures)
		if err != nil {
			return err
		}
		results = append(results, res)
		attention = attention || res.NeedsAttention(o.Prune && o.dryRun == migrate.DryRunNone)
	}
	if err := report.WriteMigrate(o.Out, o.format, results, o.dryRun == migrate.DryRunServer); err != nil {
		return err
	}
	if attention {
		return errAttention
	}
	return nil
}

func (o *MigrateOptions) migrateOne(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, failures func(string, migrate.Failure)) (*migrate.Result, error) {
	bar := report.NewProgress(o.ErrOut, "migrate "+crd.Name, isTerminal(o.ErrOut), o.Quiet)
	defer bar.Finish()
	check := report.NewProgress(o.ErrOut, "check "+crd.Name+" (old→new→old)", isTerminal(o.ErrOut), o.Quiet)
	defer check.Finish()
	opts := migrate.Options{
		RestoreOptions: migrate.RestoreOptions{
			Concurrency: o.Concurrency,
			PageSize:    o.PageSize,
			DryRun:      o.dryRun,
			Progress:    bar.Update,
			OnFailure:   func(f migrate.Failure) { failures(crd.Name, f) },
		},
		Prune:              o.Prune && o.dryRun == migrate.DryRunNone,
		Force:              o.Force,
		SwitchTimeout:      o.WaitTimeout,
		SwitchGrace:        o.switchGrace(),
		CleanManagedFields: o.CleanManagedFields,
		AcceptLoss:         o.AcceptLoss,
		Notify:             func(msg string) { fmt.Fprintln(o.ErrOut, msg) },
		CheckProgress:      check.Update,
	}
	return migrate.Migrate(ctx, o.clients, crd.Name, opts)
}

// switchGrace turns the flag (0: no wait) into the library's option (0:
// the default).
func (o *MigrateOptions) switchGrace() time.Duration {
	if o.SwitchGrace <= 0 {
		return -1
	}
	return o.SwitchGrace
}

// targets are the named CRDs, or with --all every CRD with a migration
// pending.
func (o *MigrateOptions) targets(ctx context.Context) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	all, named, err := o.list.resolve(ctx, "", o.Names...)
	if err != nil || !o.All {
		return named, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for i := range all {
		if lifecycle.MigrationPending(&all[i]) {
			out = append(out, &all[i])
		}
	}
	return out, nil
}

// failuresSink writes failures as JSON lines to --failures-file.
func (o *MigrateOptions) failuresSink() (func(string, migrate.Failure), func(), error) {
	if o.FailuresFile == "" {
		return func(string, migrate.Failure) {}, func() {}, nil
	}
	f, err := os.Create(o.FailuresFile)
	if err != nil {
		return nil, nil, err
	}
	return report.FailuresFile(f), func() { _ = f.Close() }, nil
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
