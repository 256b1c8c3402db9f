package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
)

// dryRunBare is what a bare --dry-run sets, as in kubectl, where it is the
// deprecated spelling of --dry-run=client.
const dryRunBare = "unchanged"

// addDryRunFlag adds --dry-run as kubectl has it, completing values.
func addDryRunFlag(cmd *cobra.Command, value *string, usage string, values ...string) {
	cmd.Flags().StringVar(value, "dry-run", "none", usage)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = dryRunBare
	completeValues(cmd, "dry-run", values...)
}

// parseDryRun reads --dry-run; a bare one is client, with kubectl's
// warning.
func parseDryRun(value string, errOut io.Writer) (migration.DryRun, error) {
	if value == dryRunBare {
		fmt.Fprintln(errOut, "warning: --dry-run is deprecated and can be replaced with --dry-run=client.")
		value = string(migration.DryRunClient)
	}
	return migration.ParseDryRun(value)
}
