package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// migrationOptions are what migrate and prune share: a migration of some CRDs,
// its flags, and the report of it.
type migrationOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	Names       []string
	Concurrency int
	PageSize    int64
	QPS         float32
	Burst       int
	DryRun      string
	Force       bool
	Quiet       bool
	Output      string
	WaitTimeout time.Duration
	SwitchGrace time.Duration
	AcceptLoss  bool
	Gentle      bool
	oneConnection

	dryRun    migration.DryRun
	format    render.Format
	clients   cluster.Clients
	list      *clients
	sightings *migration.Sightings
	// cluster names the context in a fleet run; manyAtOnce: clusters run
	// side by side, so no terminal bar (they would write over each other).
	cluster    string
	manyAtOnce bool
}

// addFlags adds the flags of a pass over objects.
func (o *migrationOptions) addFlags(cmd *cobra.Command, dryRunHelp string) {
	cmd.Flags().IntVar(&o.Concurrency, "concurrency", pass.DefaultConcurrency, "Most requests in flight: the pass adapts below it to what the API server takes, growing while throughput grows and backing off on 429")
	cmd.Flags().BoolVar(&o.Gentle, "gentle", false, "Pace the writes so the API server's tail latency, which every other client waits in, stays close to what it was when idle (slower; docs/commands.md#migrate)")
	cmd.Flags().Int64Var(&o.PageSize, "page-size", pass.DefaultPageSize, "Objects listed per request")
	cmd.Flags().Float32Var(&o.QPS, "qps", 0, "Client-side cap on requests per second; 0: none, the pass adapts to what the API server takes and backs off on its 429s")
	cmd.Flags().IntVar(&o.Burst, "burst", 1000, "Client-side burst of requests, with --qps")
	addDryRunFlag(cmd, &o.DryRun, dryRunHelp, "none", "server")
	cmd.Flags().BoolVar(&o.Force, "force", false, "Go ahead although the CRD reports StorageMigrating=True (the cluster's own migrator at work)")
	cmd.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "No progress on stderr")
	addOutputFlag(cmd, &o.Output)
	cmd.Flags().DurationVar(&o.WaitTimeout, "wait-timeout", migration.DefaultSwitchTimeout, "How long to wait for a storage version switch to take effect")
	cmd.Flags().DurationVar(&o.SwitchGrace, "switch-grace", migration.DefaultSwitchGrace, "How long after a storage switch a write begun before it may still land at the old version (twice the API server's request timeout); the prune waits it out and re-stores once more. 0: no wait")
	cmd.Flags().BoolVar(&o.AcceptLoss, "accept-loss", false, "Re-store objects stored at an old version even when old→new→old is not proven lossless (or loses data)")
	o.oneConnection.addFlag(cmd)
}

// Complete reads the flags; each command connects once it knows where.
func (o *migrationOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Names = args
	var err error
	if o.dryRun, err = parseDryRun(o.DryRun, o.ErrOut); err != nil {
		return err
	}
	if o.format, err = parseOutput(o.Output); err != nil {
		return err
	}
	o.sightings = newSightings(o.configFlags)
	return nil
}

// connect builds the clients of o's cluster, with the rate limit asked for.
func (o *migrationOptions) connect() error {
	cfg, err := restConfig(o.configFlags)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = o.QPS, o.Burst // QPS 0: no cap (cluster.NewClients)
	if o.list, err = newClientsFor(o.configFlags, cfg, o.oneConnection); err != nil {
		return err
	}
	o.clients = o.list.Clients
	return nil
}

// Validate checks the flags before anything is sent.
func (o *migrationOptions) Validate() error {
	switch {
	case o.dryRun == migration.DryRunClient:
		return errors.New(`--dry-run=client would show nothing: use "server" to have the API server check every write`)
	case o.Concurrency < 1 || o.Concurrency > pass.MaxConcurrency:
		return fmt.Errorf("--concurrency must be between 1 and %d, not %d", pass.MaxConcurrency, o.Concurrency)
	case o.PageSize < 1:
		return errors.New("--page-size must be at least 1")
	case o.WaitTimeout < 0 || o.SwitchGrace < 0:
		return errors.New("--wait-timeout and --switch-grace must not be negative (--switch-grace=0: no wait)")
	case o.QPS < 0 || o.Burst < 0:
		return errors.New("--qps and --burst must not be negative (--qps 0: no client-side cap)")
	}
	return nil
}

// migrateOne is one migration per CRD, as the library gives it.
type migrateOne func(context.Context, *apiextensionsv1.CustomResourceDefinition, migration.Options) (*results.Result, error)

// run runs one migration per CRD and reports them all (see migrateEach).
func (o *migrationOptions) run(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition, prune bool, one migrateOne) error {
	m := o.migrateEach(ctx, crds, prune, one)
	if len(crds) == 1 && m.first != nil {
		return m.first
	}
	if err := render.WriteMigrate(o.Out, o.format, m.reports, o.dryRun == migration.DryRunServer); err != nil {
		return err
	}
	return m.err(len(crds))
}

// migrated is what migrations of a cluster's CRDs gave.
type migrated struct {
	reports []*results.Result
	// failed are the CRDs whose migration ended in an error, each named;
	// first is the first error as it came.
	failed    []error
	first     error
	attention bool
}

// err ends the command as the worst of the migrations: an error before
// needs attention.
func (m migrated) err(crds int) error {
	switch {
	case len(m.failed) == 1:
		return m.failed[0]
	case len(m.failed) > 1:
		return fmt.Errorf("%d of %d CRDs failed (each is reported above); the first, %w", len(m.failed), crds, m.failed[0])
	case m.attention:
		return errAttention
	}
	return nil
}

// migrateEach runs one migration per CRD, one after the other, with
// progress on stderr; an interrupt names every CRD not reached. A CRD that
// fails does not stop the others: each is reported, its error among them.
func (o *migrationOptions) migrateEach(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition, prune bool, one migrateOne) migrated {
	var m migrated
	if !o.Quiet {
		if n, err := cluster.APIServers(ctx, o.clients.Dynamic); err == nil && n > 0 {
			o.say(render.Connections(o.clients.Connections, n))
		}
	}
	for i, crd := range crds {
		if ctx.Err() != nil {
			names := make([]string, 0, len(crds)-i)
			for _, c := range crds[i:] {
				names = append(names, c.Name)
			}
			o.say("interrupted: not migrated: " + strings.Join(names, ", "))
			m.attention = true
			break
		}
		res, err := o.runOne(ctx, crd, prune, one)
		if err != nil {
			m.first = cmp.Or(m.first, err)
			m.failed = append(m.failed, fmt.Errorf("%s: %w", crd.Name, err))
			res = erred(crd, err)
		}
		res.Cluster = o.cluster
		m.reports = append(m.reports, res)
		m.attention = m.attention || res.NeedsAttention(prune)
	}
	return m
}

// say writes a line for people on stderr; in a fleet it names the cluster.
func (o *migrationOptions) say(line string) {
	if o.cluster != "" {
		line = o.cluster + ": " + line
	}
	fmt.Fprintln(o.ErrOut, line)
}

// erred is the result of a CRD whose migration ended in err: nothing is
// known of its objects, and nothing was pruned.
func erred(crd *apiextensionsv1.CustomResourceDefinition, err error) *results.Result {
	msg := render.ErrorMessage(err)
	if h := hintFor(err); h != "" {
		msg += " (" + h + ")"
	}
	return &results.Result{CRD: crd.Name, Storage: stages.StorageVersion(crd), StoredVersions: crd.Status.StoredVersions, StoredVersionsAfter: crd.Status.StoredVersions,
		Proofs: []results.Proof{}, RestoreResult: results.RestoreResult{Failures: []results.Failure{}, StopReason: results.StopError, Stopped: "error: " + msg},
		PruneReason: results.PruneIncomplete, PruneSkipped: "the migration ended in an error"}
}

func (o *migrationOptions) runOne(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, prune bool, one migrateOne) (*results.Result, error) {
	title := "migrate " + crd.Name
	if o.cluster != "" {
		title = o.cluster + ": " + title
	}
	bar := newProgressBar(o.ErrOut, title, isTerminal(o.ErrOut) && !o.manyAtOnce, o.Quiet)
	defer bar.Finish()
	return one(ctx, crd, migration.Options{
		Restore: migration.RestoreOptions{
			Concurrency: o.Concurrency,
			Gentle:      o.Gentle,
			PageSize:    o.PageSize,
			DryRun:      o.dryRun,
			Progress:    bar.Update,
			OnLimit:     bar.SetLimit,
		},
		KeepStoredVersions: !prune,
		Force:              o.Force,
		SwitchTimeout:      o.WaitTimeout,
		SwitchGrace:        o.switchGrace(),
		AcceptLoss:         o.AcceptLoss,
		Sightings:          o.sightings,
		Notify:             o.say,
		Countdown:          o.countdown(),
	})
}

// countdown shows the switch grace running out, after saying how to skip
// it: the library knows no flags.
func (o *migrationOptions) countdown() func(string, time.Time) func() {
	show := countdownTo(o.ErrOut, isTerminal(o.ErrOut) && !o.manyAtOnce, o.Quiet)
	return func(what string, until time.Time) func() {
		o.say(skipTheGrace)
		return show(what, until)
	}
}

// switchGrace turns the flag (0: no wait) into the library's option (0:
// the default).
func (o *migrationOptions) switchGrace() time.Duration {
	if o.SwitchGrace <= 0 {
		return migration.NoSwitchGrace
	}
	return o.SwitchGrace
}
