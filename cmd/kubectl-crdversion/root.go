package main

import (
	"flag"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// NewCmdRoot builds `kubectl crdversion` with kubectl's global flags.
func NewCmdRoot(streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdRoot(genericclioptions.NewConfigFlags(true), streams)
}

// newCmdRoot takes the flags so a test can wrap the client's transport.
func newCmdRoot(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use: "crdversion",
		// Usage lines and errors name the command as a user types it.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl crdversion"},
		Short:       "Manage the lifecycle of CustomResourceDefinition versions",
		Long: `Manage the lifecycle of CustomResourceDefinition versions: see every version's
stage and what to do next, move a version from introduced to removed one safe
step at a time, and re-store objects at the storage version before pruning
status.storedVersions.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Report results on stdout and everything else on stderr.
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			if err := refuseRepeated(c); err != nil {
				return err
			}
			rest.SetDefaultWarningHandler(rest.NewWarningWriter(streams.ErrOut, rest.WarningWriterOptions{Deduplicate: true}))
			// Taken in silence, -n would let a user think a command kept
			// to one namespace.
			if f := c.Flags().Lookup("namespace"); f != nil && f.Changed {
				fmt.Fprintln(streams.ErrOut, "warning: -n/--namespace has no effect: CRDs are cluster-scoped, and every command acts on their objects in all namespaces")
			}
			return nil
		},
		// Not runnable: cobra prints the help for no command, and for a
		// mistyped one says which commands are near it.
	}
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		//lint:ignore ST1005 kubectl's own words for a flag error: "See '... --help' for usage."
		return fmt.Errorf("%w%s%s --help' for usage.", err, usageHint, c.CommandPath())
	})
	flags.AddFlags(cmd.PersistentFlags())
	contexts := wrapContexts(cmd.PersistentFlags())
	addLogFlags(cmd)
	cmd.AddCommand(
		NewCmdStatus(flags, contexts, streams),
		NewCmdPromote(flags, contexts, streams),
		NewCmdRollback(flags, contexts, streams),
		NewCmdVerify(flags, contexts, streams),
		NewCmdCheck(flags, contexts, streams),
		NewCmdUpgrade(flags, contexts, streams),
		NewCmdUsage(flags, streams),
		NewCmdConvert(flags, streams),
		NewCmdMigrate(flags, contexts, streams),
		NewCmdPrune(flags, streams),
		NewCmdVersion(streams),
		NewCmdCompletion(streams),
	)
	// Completion goes through kubectl: see `kubectl crdversion completion`.
	cmd.CompletionOptions.DisableDefaultCmd = true
	rememberAll(cmd)
	return cmd
}

// addLogFlags adds kubectl's -v and --vmodule: at -v 6 client-go logs every
// request and its answer to stderr, at 8 the bodies too.
func addLogFlags(cmd *cobra.Command) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	for _, name := range []string{"v", "vmodule"} {
		cmd.PersistentFlags().AddGoFlag(fs.Lookup(name))
	}
}
