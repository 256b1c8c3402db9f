package main

import (
	"context"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
)

// clusterTarget is where a command that writes runs: one cluster, through
// clients, or each cluster of a fleet, canary first.
type clusterTarget struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	oneConnection
	fleetFlags

	// fleet is the clusters a fleet run takes, canary first; none: one.
	fleet   []string
	format  render.Format
	clients *clients
}

// aim resolves the fleet, or, for one cluster, builds its clients.
func (t *clusterTarget) aim() error {
	var err error
	if t.fleet, err = t.clusters(t.configFlags); err != nil || len(t.fleet) > 0 {
		return err
	}
	t.clients, err = newClients(t.configFlags, t.oneConnection)
	return err
}

// onFleet runs run on each cluster of the fleet (runOnFleet), with the
// target aimed at that one cluster.
func (t *clusterTarget) onFleet(ctx context.Context, run func(context.Context, clusterTarget) error) error {
	return runOnFleet(ctx, t.IOStreams, t.configFlags, t.fleetFlags, t.fleet, t.format, func(ctx context.Context, flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, format render.Format) error {
		one := *t
		one.configFlags, one.IOStreams, one.format, one.fleet = flags, streams, format, nil
		var err error
		if one.clients, err = newClients(flags, t.oneConnection); err != nil {
			return err
		}
		return run(ctx, one)
	})
}
