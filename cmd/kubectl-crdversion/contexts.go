package main

import (
	"slices"

	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// contextsFlag remembers every --context given, where kubectl's flag keeps
// the last: a command that takes a fleet (check, status) runs on each.
type contextsFlag struct {
	pflag.Value
	all []string
}

func (c *contextsFlag) Set(s string) error {
	c.all = append(c.all, s)
	return c.Value.Set(s)
}

// given is every --context given, each once it was set.
func (c *contextsFlag) given() []string {
	if c == nil {
		return nil
	}
	return c.all
}

// wrapContexts makes the --context flag of fs remember every value.
func wrapContexts(fs *pflag.FlagSet) *contextsFlag {
	f := fs.Lookup("context")
	c := &contextsFlag{Value: f.Value}
	f.Value = c
	return c
}

// fleetContexts is the contexts a command runs on: every one of the kubeconfig's
// with all, else those given with --context when more than one, in the
// order given, each once.
func fleetContexts(flags *genericclioptions.ConfigFlags, given *contextsFlag, all bool) ([]string, error) {
	if !all {
		if given == nil || len(given.all) < 2 {
			return nil, nil
		}
		var names []string
		for _, n := range given.all {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		return names, nil
	}
	raw, err := flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, err
	}
	var names []string
	for name := range raw.Contexts {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// inContext is flags with the context set to name: the same kubeconfig,
// identity and timeouts; the context's own cluster and user.
func inContext(flags *genericclioptions.ConfigFlags, name string) *genericclioptions.ConfigFlags {
	c := genericclioptions.NewConfigFlags(true)
	c.CacheDir, c.KubeConfig, c.Context = flags.CacheDir, flags.KubeConfig, &name
	c.Impersonate, c.ImpersonateUID, c.ImpersonateGroup, c.ImpersonateUserExtra = flags.Impersonate, flags.ImpersonateUID, flags.ImpersonateGroup, flags.ImpersonateUserExtra
	c.Timeout, c.DisableCompression, c.ProxyURL, c.WrapConfigFn = flags.Timeout, flags.DisableCompression, flags.ProxyURL, flags.WrapConfigFn
	return c
}

// overFleet runs one for each context, four at a time, and joins what
// they give in the contexts' order.
func overFleet[T any](contexts []string, one func(name string) []T) []T {
	found := make([][]T, len(contexts))
	var g errgroup.Group
	g.SetLimit(4)
	for i, name := range contexts {
		g.Go(func() error {
			found[i] = one(name)
			return nil
		})
	}
	_ = g.Wait()
	var out []T
	for _, f := range found {
		out = append(out, f...)
	}
	return out
}
