package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// fleetFlags make a command that writes run on a fleet, canary first.
type fleetFlags struct {
	AllContexts bool
	Parallel    int
	contexts    *contextsFlag
}

// addFleetFlags adds --all-contexts and --parallel; the command takes several
// --context.
func (f *fleetFlags) addFleetFlags(cmd *cobra.Command, contexts *contextsFlag, does string) {
	f.contexts = contexts
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[takesFleet] = "true"
	cmd.Flags().BoolVar(&f.AllContexts, "all-contexts", false, does+" on every context of the kubeconfig, the current one first as a canary; --context given more than once takes those, in that order")
	cmd.Flags().IntVar(&f.Parallel, "parallel", 1, "On a fleet, how many clusters after the canary are taken at once")
}

// clusters is the fleet, canary first: --context given more than once, in
// that order; --all-contexts, the current context (or the one --context
// names) first, then the rest by name. None: one cluster, no fleet.
func (f *fleetFlags) clusters(flags *genericclioptions.ConfigFlags) ([]string, error) {
	contexts, err := fleetContexts(flags, f.contexts, f.AllContexts)
	if err != nil || !f.AllContexts {
		return contexts, err
	}
	raw, err := flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, err
	}
	canary := raw.CurrentContext
	if c := flags.Context; c != nil && *c != "" {
		canary = *c
		if !slices.Contains(contexts, canary) {
			return nil, fmt.Errorf("context %q is not in the kubeconfig: --context names the canary of --all-contexts", canary)
		}
	}
	i := slices.Index(contexts, canary)
	if i < 0 {
		return nil, errors.New("--all-contexts: the kubeconfig has no current context to take as the canary: name it with --context")
	}
	contexts = append([]string{canary}, slices.Delete(contexts, i, i+1)...)
	return contexts, nil
}

// validate refuses a bound no cluster fits in.
func (f *fleetFlags) validate() error {
	if f.Parallel < 1 {
		return fmt.Errorf("--parallel must be at least 1, not %d", f.Parallel)
	}
	return nil
}
