package main

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

// runControllerManager runs kube-controller-manager with only the
// controllers a storage version migration needs: the garbage collector,
// whose metadata informers the migrator walks, and the migrator itself. It
// blocks until ctx ends.
//
// The garbage collector finds resources on a 30-second discovery resync,
// so CRDs created after it starts are migrated up to ~40 s late: start it
// after the CRDs exist.
func runControllerManager(ctx context.Context, kubeconfig string) error {
	s, err := options.NewKubeControllerManagerOptions()
	if err != nil {
		return err
	}
	all, disabled, aliases := app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases()
	named := s.Flags(all, disabled, aliases)
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=garbagecollector,svm",
		"--leader-elect=false",
		"--secure-port=0",
	}); err != nil {
		return err
	}
	s.ParsedFlags = &named
	if err := s.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	config, err := s.Config(ctx, all, disabled, aliases)
	if err != nil {
		return fmt.Errorf("configuring kube-controller-manager: %w", err)
	}
	return app.Run(ctx, config.Complete())
}
