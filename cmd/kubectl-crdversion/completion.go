package main

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// completionShim is what kubectl (1.26+) runs, found on PATH as
// kubectl_complete-crdversion, to complete `kubectl crdversion ...`.
//
//go:embed kubectl_complete-crdversion
var completionShim string

// NewCmdCompletion builds `kubectl crdversion completion`: the shim, with
// the line that installs it beside the plugin (krew's bin directory too).
func NewCmdCompletion(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "completion",
		Short: "Print the script that makes kubectl complete `kubectl crdversion ...`",
		Long: `Print kubectl_complete-crdversion, the script kubectl (1.26 and later) runs
from PATH to complete the arguments of a plugin: commands, CRD names, versions
of the named CRD, and flag values. kubectl's own shell completion
(source <(kubectl completion bash), or zsh, fish, powershell) must be set up.
Install it beside the plugin, which works for krew's bin directory too:

  kubectl crdversion completion > "$(dirname "$(command -v kubectl-crdversion)")/kubectl_complete-crdversion"
  chmod +x "$(dirname "$(command -v kubectl-crdversion)")/kubectl_complete-crdversion"`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprint(streams.Out, completionShim)
			return err
		},
	}
}

// listCRDs lists the CRDs for a completion; any failure completes nothing
// rather than printing an error into the shell.
func listCRDs(c *cobra.Command, flags *genericclioptions.ConfigFlags) []apiextensionsv1.CustomResourceDefinition {
	cfg, err := restConfig(flags)
	if err != nil {
		return nil
	}
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil
	}
	crds, err := cluster.ListCRDs(c.Context(), client, "")
	if err != nil {
		return nil
	}
	return crds
}

// completeCRDNames completes CRD names at every position.
func completeCRDNames(flags *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	return func(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return crdNames(listCRDs(c, flags), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func crdNames(crds []apiextensionsv1.CustomResourceDefinition, toComplete string) []cobra.Completion {
	var names []cobra.Completion
	for _, crd := range crds {
		if strings.HasPrefix(crd.Name, toComplete) {
			names = append(names, crd.Name)
		}
	}
	return names
}

// completeOneCRD completes the one CRD a command takes.
func completeOneCRD(flags *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return crdNames(listCRDs(c, flags), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeCRDThenVersions completes a CRD name first, then the versions of
// that CRD (highest priority first), up to max arguments in all.
func completeCRDThenVersions(flags *genericclioptions.ConfigFlags, max int) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		crds := listCRDs(c, flags)
		switch {
		case len(args) == 0:
			return crdNames(crds, toComplete), cobra.ShellCompDirectiveNoFileComp
		case max > 0 && len(args) >= max:
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		crd, err := cluster.Resolve(crds, args[0], noDiscovery)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, v := range crd.Spec.Versions {
			if strings.HasPrefix(v.Name, toComplete) && !slices.Contains(args[1:], v.Name) {
				names = append(names, v.Name)
			}
		}
		lifecycle.SortByPriority(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeValues completes a flag from a fixed list.
func completeValues(cmd *cobra.Command, flag string, values ...string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}
