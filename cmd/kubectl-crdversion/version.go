package main

import (
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
)

// version is set at build time: -ldflags "-X main.version=v0.1.0".
var version = "dev"

// NewCmdVersion builds `kubectl crdversion version`.
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			f, err := parseOutput(output)
			if err != nil {
				return err
			}
			return render.WriteVersion(streams.Out, f, buildVersion())
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// buildVersion is the version stamped at build time or, for a binary built
// by `go install module@version`, the module version Go recorded in it.
func buildVersion() render.Version {
	v := render.Version{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			v.Commit = s.Value
		}
	}
	return v
}
