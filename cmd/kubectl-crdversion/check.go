package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/check"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// CheckOptions holds what `kubectl crdversion check` needs.
type CheckOptions struct {
	configFlags *genericclioptions.ConfigFlags
	contexts    *contextsFlag
	genericiooptions.IOStreams

	Filenames   []string
	AgainstFile []string
	Recursive   bool
	Output      string
	Strict      bool
	Policy      bool
	NoObjects   bool
	AllContexts bool
	oneConnection

	format  render.Format
	newCRDs *manifest.Found
	oldCRDs *manifest.Found
}

// NewCmdCheck builds `kubectl crdversion check`.
func NewCmdCheck(flags *genericclioptions.ConfigFlags, contexts *contextsFlag, streams genericiooptions.IOStreams) *cobra.Command {
	o := &CheckOptions{configFlags: flags, contexts: contexts, IOStreams: streams}
	cmd := &cobra.Command{
		Use:         "check -f NEW [--against-file OLD]",
		Annotations: map[string]string{takesFleet: "true"},
		Short:       "Before an upgrade: what the API server will reject, which steps are skipped, which schema changes break clients",
		Long: `Compare CRD manifests about to be applied with the CRDs on the cluster (or,
with --against-file, with the manifests they replace) and report, each with
its severity and the fix in order:

  rejected     what the API server refuses: a version status.storedVersions
               names dropped from spec.versions, a scope change, and (on a
               cluster) everything else a server-side dry run of the new CRD
               refuses
  lifecycle    steps skipped: storage switched to a version never served,
               a version unserved without deprecation, removed while served,
               two steps in one release
  schema       breaking changes of a version that stays served (fields
               removed, types changed, enum values removed, new required
               fields, tighter limits, new validation rules), and a storage
               switch that re-storing objects would lose data on
  objects      (on a cluster) live objects the new schemas refuse, or hold
               fields they drop (pruned: gone at the next write), grouped
  dropped      a CRD the old manifests have and the new ones lack (a pruning
               apply deletes it and every object of it), and a CRD of the
               same kind under a new group (a rename: no object moves)
  deprecation  versions deprecated, unserved or removed (for release notes)

The severity is the consequence: an error is what will fail (the apply is
refused, a live object is refused now or loses stored fields), a warning
what may fail later or elsewhere, a note what fails nothing (a rule every
live object passes).
--policy, for CRD authors, keeps the release rules (lifecycle, schema) errors.

-o markdown writes release-note sections: Deprecated APIs, Breaking changes,
Upgrade steps. Nothing on the cluster is changed.

Exit status: 0 nothing that needs attention, 3 errors found (with --strict,
warnings too), 1 the check itself failed.`,
		Example: `  # Before a Helm upgrade: the chart's CRDs against the cluster
  helm template my-release ./chart | kubectl crdversion check -f -

  # In CI, on a pull request that changes CRDs: no cluster needed
  kubectl crdversion check -f deploy/crds/ --against-file base/deploy/crds/ -o markdown`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	cmd.Flags().StringSliceVarP(&o.Filenames, "filename", "f", nil, "CRD manifests to check: a file, a directory, or - for stdin (repeatable)")
	cmd.Flags().StringSliceVar(&o.AgainstFile, "against-file", nil, "Compare with these manifests (file or directory) instead of the cluster")
	cmd.Flags().BoolVarP(&o.Recursive, "recursive", "R", false, "Process the directories given with -f and --against-file recursively")
	addOutputFlag(cmd, &o.Output, render.FormatMarkdown)
	cmd.Flags().BoolVar(&o.Strict, "strict", false, "Exit 3 on warnings too")
	cmd.Flags().BoolVar(&o.Policy, "policy", false, "For CRD authors: the release rules (one lifecycle step per release, no breaking schema change) are errors, not warnings")
	cmd.Flags().BoolVar(&o.NoObjects, "no-objects", false, "Do not validate live objects against the new schemas (only the CRDs are compared)")
	cmd.Flags().BoolVar(&o.AllContexts, "all-contexts", false, "Check against every context of the kubeconfig at once (a fleet); --context given more than once checks those")
	o.oneConnection.addFlag(cmd)
	return cmd
}

// Complete reads the manifests: the new ones and, with --against-file, the
// old ones.
func (o *CheckOptions) Complete(cmd *cobra.Command, _ []string) error {
	var err error
	if o.format, err = parseOutput(o.Output, render.FormatMarkdown); err != nil {
		return err
	}
	if len(o.Filenames) == 0 {
		return errors.New("-f is required: the CRD manifests to check (a file, a directory, or - for stdin)")
	}
	if o.newCRDs, err = manifest.ReadCRDs(cmd.Context(), o.Filenames, o.Recursive, o.In); err != nil {
		return err
	}
	if len(o.AgainstFile) > 0 {
		o.oldCRDs, err = manifest.ReadCRDs(cmd.Context(), o.AgainstFile, o.Recursive, o.In)
		return err
	}
	return nil
}

// checkCluster checks the new CRDs against the cluster of flags. Its
// clients have no client-side limit: four requests per CRD, eight CRDs at
// a time, where a limit of 100/s would make 500 CRDs take 20 s for no
// one's benefit.
func (o *CheckOptions) checkCluster(ctx context.Context, flags *genericclioptions.ConfigFlags, progress func(string, int64, int64)) ([]results.Finding, error) {
	c, err := newClients(flags, o.oneConnection)
	if err != nil {
		return nil, err
	}
	// Told the CRDs, the count of check's own requests to deprecated
	// versions costs no metrics read for the others, and no lookup of a
	// CRD after the run.
	known := make([]apiextensionsv1.CustomResourceDefinition, len(o.newCRDs.CRDs))
	for i, crd := range o.newCRDs.CRDs {
		known[i] = *crd
	}
	c.own.Know(known)
	return check.AgainstCluster(ctx, c.Clients, o.newCRDs.CRDs, check.Options{Objects: !o.NoObjects, Policy: o.Policy, PageSize: 500, Progress: progress, OwnRequests: ownRecords(flags)})
}

// progress shows the live objects validated on one cluster; CRDs are
// checked several at a time, and the bar shows their sum.
func (o *CheckOptions) progress() (func(string, int64, int64), func()) {
	bar := newProgressBar(o.ErrOut, "validate live objects", isTerminal(o.ErrOut), false)
	var mu sync.Mutex
	per := map[string][2]int64{}
	return func(crd string, done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		per[crd] = [2]int64{done, total}
		var d, t int64
		for _, p := range per {
			d, t = d+p[0], t+p[1]
		}
		bar.Update(d, t)
	}, bar.Finish
}

// checkFleet checks every context at once, four at a time. A cluster the
// check cannot run on is an error row of its own, not the end of the
// others: nothing is known of it, so nothing can be said to be safe there.
func (o *CheckOptions) checkFleet(ctx context.Context, contexts []string) []results.Finding {
	return overFleet(contexts, func(name string) []results.Finding {
		f, err := o.checkCluster(ctx, inContext(o.configFlags, name), nil)
		if err != nil {
			f = []results.Finding{{Severity: lifecycle.SeverityError, Kind: results.FindingUnchecked, Rule: "clusterUnchecked",
				Message: "the check could not run on this cluster: " + render.ErrorMessage(err)}}
		}
		for j := range f {
			f[j].Cluster = name
			for k, a := range f[j].Fix {
				f[j].Fix[k] = a.On(name)
			}
		}
		return f
	})
}

// Validate checks the input before anything is sent.
func (o *CheckOptions) Validate() error {
	switch {
	case len(o.newCRDs.CRDs) == 0:
		return errors.New("no CustomResourceDefinition in the manifests given with -f")
	}
	return nil
}

// Run compares and reports.
func (o *CheckOptions) Run(ctx context.Context) error {
	render.WriteWarnings(o.ErrOut, o.newCRDs.Warnings)
	var findings []results.Finding
	against := "cluster"
	if o.oldCRDs != nil {
		render.WriteWarnings(o.ErrOut, o.oldCRDs.Warnings)
		against = "files"
		findings = check.Consequence(check.CheckFiles(o.oldCRDs.CRDs, o.newCRDs.CRDs), nil, o.Policy)
	} else {
		contexts, err := fleetContexts(o.configFlags, o.contexts, o.AllContexts)
		if err != nil {
			return err
		}
		if len(contexts) > 0 {
			against = fmt.Sprintf("%d clusters", len(contexts))
			findings = o.checkFleet(ctx, contexts)
		} else {
			progress, finish := o.progress()
			findings, err = o.checkCluster(ctx, o.configFlags, progress)
			finish()
			if err != nil {
				return err
			}
		}
	}
	r := render.NewCheckReport(against, len(o.newCRDs.CRDs), findings)
	r.Width = terminalWidth(o.Out)
	if err := render.WriteCheck(o.Out, o.format, r); err != nil {
		return err
	}
	if r.Errors > 0 || (o.Strict && r.Warnings > 0) {
		return errAttention
	}
	return nil
}
