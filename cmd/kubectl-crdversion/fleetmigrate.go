package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/fleet"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// runFleet migrates on each cluster, the canary alone first, and reports
// every cluster: exit 0 only when each is done.
func (o *MigrateOptions) runFleet(ctx context.Context, contexts []string) error {
	failures, closeFailures, err := o.failuresSink()
	if err != nil {
		return err
	}
	defer closeFailures()
	rows := fleet.Run(ctx, contexts, o.Parallel, func(ctx context.Context, name string) (migrated, fleet.State, string) {
		one := *o
		one.configFlags = inContext(o.configFlags, name)
		one.cluster, one.manyAtOnce = name, o.Parallel > 1 && len(contexts) > 2
		return one.onCluster(ctx, failures)
	})
	var (
		runs []render.ClusterRun
		all  []*results.Result
	)
	for _, r := range rows {
		runs = append(runs, render.ClusterRun{Cluster: r.Context, Result: string(r.State), Why: r.Why, CRDs: len(r.Value.reports), Duration: r.Took})
		all = append(all, r.Value.reports...)
	}
	if err := render.WriteFleetMigrate(o.Out, o.format, runs, all, o.dryRun == migration.DryRunServer); err != nil {
		return err
	}
	if !fleet.AllDone(rows) {
		return errAttention
	}
	return nil
}

// onCluster migrates o's cluster and says where it ended.
func (o *MigrateOptions) onCluster(ctx context.Context, failures func(string, string, results.Failure)) (migrated, fleet.State, string) {
	if err := reach(ctx, o.configFlags); err != nil {
		return migrated{}, fleet.Failed, "unreachable: " + render.ErrorMessage(err)
	}
	if err := o.connect(); err != nil {
		return migrated{}, fleet.Failed, render.ErrorMessage(err)
	}
	crds, err := o.targets(ctx)
	if err != nil {
		return migrated{}, fleet.Failed, render.ErrorMessage(err)
	}
	if len(crds) == 0 {
		return migrated{}, fleet.Done, ""
	}
	m := o.migrateEach(ctx, crds, o.pruning(), o.migration(failures))
	switch {
	case len(m.failed) > 0:
		return m, fleet.Failed, render.ErrorMessage(m.err(len(crds)))
	case m.attention:
		return m, fleet.Attention, notDone(m.reports)
	}
	return m, fleet.Done, ""
}

// notDone says, per CRD that needs attention, what is left.
func notDone(rs []*results.Result) string {
	var why []string
	for _, r := range rs {
		var left []string
		switch {
		case r.Stopped != "":
			left = append(left, "stopped: "+r.Stopped)
		default:
			for _, n := range []struct {
				count int64
				what  string
			}{{r.Failed, "failed"}, {r.Lost, "left as they are (they would lose data)"}, {r.Changed, "changed by the write"}} {
				if n.count > 0 {
					left = append(left, fmt.Sprintf("%d %s", n.count, n.what))
				}
			}
		}
		if !r.Pruned && r.PruneSkipped != "" && r.PruneReason != results.PruneNothingToPrune {
			left = append(left, "not pruned: "+r.PruneSkipped)
		}
		if a := r.ServedAgain; a != nil && !a.Undone {
			left = append(left, a.UndoError)
		}
		if len(left) > 0 {
			why = append(why, r.CRD+": "+strings.Join(left, "; "))
		}
	}
	if len(why) == 0 {
		return "needs attention (above)"
	}
	return strings.Join(why, " | ")
}
