package main

import (
	"strings"

	"github.com/spf13/cobra"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/cluster"
)

// completeCRDNames completes CRD names from the cluster the flags point at,
// for `kubectl crdversion <cmd> <TAB>` through kubectl_complete-crdversion.
// Any failure completes nothing rather than printing an error into the shell.
func completeCRDNames(flags *genericclioptions.ConfigFlags) cobra.CompletionFunc {
	return func(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		cfg, err := restConfig(flags)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		client, err := apiextensionsclient.NewForConfig(cfg)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		crds, err := cluster.ListCRDs(c.Context(), client, "")
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []cobra.Completion
		for _, crd := range crds {
			if strings.HasPrefix(crd.Name, toComplete) {
				names = append(names, crd.Name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
