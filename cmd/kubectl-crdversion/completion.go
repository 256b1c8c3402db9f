package main

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
)

// completionShim is what kubectl (1.26+) runs, found on PATH as
// kubectl_complete-crdversion, to complete `kubectl crdversion ...`.
//
//go:embed kubectl_complete-crdversion
var completionShim string

// NewCmdCompletion builds `kubectl crdversion completion`: the shim, or
// with --install the shim written beside the plugin.
func NewCmdCompletion(streams genericiooptions.IOStreams) *cobra.Command {
	var install, uninstall bool
	cmd := &cobra.Command{
		Use:   "completion [--install | --uninstall]",
		Short: "Print or install the script that makes kubectl complete `kubectl crdversion ...`",
		Long: `Print kubectl_complete-crdversion, the script kubectl (1.26 and later) runs
from PATH to complete the arguments of a plugin: commands, CRD names, versions
of the named CRD, and flag values. kubectl's own shell completion
(source <(kubectl completion bash), or zsh, fish, powershell) must be set up.

--install writes it beside the plugin, in the directory of PATH kubectl finds
kubectl-crdversion in (krew's bin directory after a krew install). krew removes
only what it installed: before kubectl krew uninstall crdversion, run
kubectl crdversion completion --uninstall.`,
		Example: `  # Complete kubectl crdversion ... in every shell kubectl completes
  kubectl crdversion completion --install`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return nil
			case slices.Contains([]string{"bash", "zsh", "fish", "powershell"}, args[0]):
				// kubectl completion's habit: the shell as an argument.
				return fmt.Errorf("the plugin has no %s script of its own: kubectl completes `kubectl crdversion ...` in every shell through kubectl's completion (source <(kubectl completion %s)) and the script that kubectl crdversion completion --install writes beside the plugin", args[0], args[0])
			}
			return fmt.Errorf("completion takes no arguments, not %q: kubectl crdversion completion --install", args[0])
		},
		RunE: func(*cobra.Command, []string) error {
			switch {
			case install && uninstall:
				return errors.New("--install and --uninstall cannot be used together")
			case install || uninstall:
				return installShim(streams, uninstall)
			}
			_, err := fmt.Fprint(streams.Out, completionShim)
			return err
		},
	}
	cmd.Flags().BoolVar(&install, "install", false, "Write the script beside the plugin, on PATH")
	cmd.Flags().BoolVar(&uninstall, "uninstall", false, "Remove the script --install wrote")
	return cmd
}

// installShim writes (or removes) the shim in the directory PATH holds the
// plugin in: where kubectl found it, krew's bin directory included, whose
// entry is a link into krew's store that must not be followed.
func installShim(streams genericiooptions.IOStreams, uninstall bool) error {
	plugin, err := exec.LookPath("kubectl-crdversion")
	if err != nil {
		return fmt.Errorf("kubectl-crdversion is not on PATH, so kubectl could not run the script either: %w", err)
	}
	shim := filepath.Join(filepath.Dir(plugin), "kubectl_complete-crdversion")
	if uninstall {
		err := os.Remove(shim)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			_, err = fmt.Fprintf(streams.Out, "nothing to remove: %s is not there\n", shim)
			return err
		case err != nil:
			return err
		}
		_, err = fmt.Fprintf(streams.Out, "removed %s\n", shim)
		return err
	}
	if err := os.WriteFile(shim, []byte(completionShim), 0o755); err != nil {
		return err
	}
	// WriteFile keeps the mode of a file that was there.
	if err := os.Chmod(shim, 0o755); err != nil {
		return err
	}
	_, err = fmt.Fprintf(streams.Out, "installed %s\nbefore kubectl krew uninstall crdversion (krew removes only what it installed): kubectl crdversion completion --uninstall\n", shim)
	return err
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
		stages.SortByPriority(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeValues completes a flag from a fixed list.
func completeValues(cmd *cobra.Command, flag string, values ...string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}
