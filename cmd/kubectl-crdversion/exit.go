package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
)

// Exit codes, documented in README.md.
const (
	exitOK        = 0
	exitError     = 1
	exitAttention = 3
)

// usageHint starts the second line of a flag error.
const usageHint = "\nSee '"

// errAttention ends a command whose work finished but whose result needs a
// person's attention: its output already says why, so nothing more is printed.
var errAttention = errors.New("needs attention")

// options is the shape of every command, as in kubectl: Complete fills in
// from flags and arguments, Validate refuses bad input before anything is
// sent, Run does the work.
type options interface {
	Complete(cmd *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

func runE(o options) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		if err := o.Complete(c, args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(c.Context())
	}
}

// execute runs the command and is the one place errors are printed, as one
// `error: ...` line on stderr, and turned into an exit code.
func execute(ctx context.Context, cmd *cobra.Command, streams genericiooptions.IOStreams) int {
	err := cmd.ExecuteContext(ctx)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errAttention):
		return exitAttention
	}
	// One line, as kubectl prints errors (an API error may span several),
	// then the usage hint of a flag error on its own line, as kubectl does.
	msg, hint, _ := strings.Cut(err.Error(), usageHint)
	fmt.Fprintf(streams.ErrOut, "error: %s\n", report.Printable(strings.Join(strings.Fields(msg), " ")))
	if hint != "" {
		fmt.Fprintf(streams.ErrOut, "%s%s\n", strings.TrimPrefix(usageHint, "\n"), strings.TrimSpace(hint))
	}
	return exitError
}
