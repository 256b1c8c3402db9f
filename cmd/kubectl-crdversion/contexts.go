package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

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
// order given, each once. A fleet refuses the flags that name one cluster
// or one identity: each context brings its own.
func fleetContexts(flags *genericclioptions.ConfigFlags, given *contextsFlag, all bool) ([]string, error) {
	if all && len(given.given()) > 1 {
		return nil, errors.New("--all-contexts takes every context: give --context once at most (the canary), or drop --all-contexts")
	}
	var names []string
	switch {
	case all:
		raw, err := flags.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, err
		}
		for name := range raw.Contexts {
			names = append(names, name)
		}
		slices.Sort(names)
		if len(names) == 0 {
			return nil, errors.New("--all-contexts: the kubeconfig has no contexts")
		}
	case len(given.given()) > 1:
		for _, n := range given.given() {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	default:
		return nil, nil
	}
	if f := oneClusterFlags(flags); len(f) > 0 {
		return nil, fmt.Errorf("%s name one cluster or identity; a fleet takes each context's own: drop them, or name one context", strings.Join(f, ", "))
	}
	return names, nil
}

// oneClusterFlags is the flags given that would aim every context of a
// fleet at one server or one identity.
func oneClusterFlags(flags *genericclioptions.ConfigFlags) []string {
	var set []string
	for _, f := range []struct {
		name string
		v    *string
	}{
		{"--server", flags.APIServer}, {"--cluster", flags.ClusterName}, {"--user", flags.AuthInfoName},
		{"--token", flags.BearerToken}, {"--username", flags.Username}, {"--password", flags.Password},
		{"--client-certificate", flags.CertFile}, {"--client-key", flags.KeyFile},
		{"--certificate-authority", flags.CAFile}, {"--tls-server-name", flags.TLSServerName},
	} {
		if f.v != nil && *f.v != "" {
			set = append(set, f.name)
		}
	}
	return set
}

// inContext is flags with the context set to name: the same kubeconfig,
// impersonation, namespace, TLS and timeouts; the context's own cluster and
// user (fleetContexts refuses flags that would override them).
func inContext(flags *genericclioptions.ConfigFlags, name string) *genericclioptions.ConfigFlags {
	c := genericclioptions.NewConfigFlags(true)
	c.CacheDir, c.KubeConfig, c.Context = flags.CacheDir, flags.KubeConfig, &name
	c.Impersonate, c.ImpersonateUID, c.ImpersonateGroup, c.ImpersonateUserExtra = flags.Impersonate, flags.ImpersonateUID, flags.ImpersonateGroup, flags.ImpersonateUserExtra
	c.Timeout, c.DisableCompression, c.ProxyURL, c.WrapConfigFn = flags.Timeout, flags.DisableCompression, flags.ProxyURL, flags.WrapConfigFn
	c.Namespace, c.Insecure = flags.Namespace, flags.Insecure
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

// clusterArgs is the flags that aim a printed command at the cluster these
// flags reach: pasted as printed, it runs where the refusal was met, the
// context of a fleet included.
func clusterArgs(flags *genericclioptions.ConfigFlags) string {
	var b strings.Builder
	for _, f := range []struct {
		name string
		v    *string
	}{{"--kubeconfig", flags.KubeConfig}, {"--context", flags.Context}} {
		if f.v != nil && *f.v != "" {
			b.WriteString(" " + f.name + " " + shellWord(*f.v))
		}
	}
	return b.String()
}

// shellWord is s as one word of a POSIX shell.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/@=+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
