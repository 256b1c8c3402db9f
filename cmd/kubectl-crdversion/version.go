package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// version is set at build time: -ldflags "-X main.version=v0.1.0".
var version = "dev"

// NewCmdVersion builds `kubectl crdversion version`.
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(streams.Out, "kubectl-crdversion %s %s/%s %s\n", version, runtime.GOOS, runtime.GOARCH, runtime.Version())
			return err
		},
	}
}
