package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
)

// Exit codes, documented in README.md.
const (
	exitOK        = 0
	exitError     = 1
	exitAttention = 3
)

// usageHint starts the second line of a flag error.
const usageHint = "\nSee '"

// didYouMean starts cobra's suggestions for a mistyped command.
const didYouMean = "\n\nDid you mean this?\n"

// errAttention ends a command whose work finished but whose result needs a
// person's attention: its output already says why, so nothing more is printed.
var errAttention = errors.New("needs attention")

// errReported ends a command with exit 1 whose errors it printed itself,
// one line each (status of names some of which find no CRD).
var errReported = errors.New("reported")

// attentionError is a refusal whose words are the error's own: printed as
// an error, it ends the command with exit 3, as a refusal does, not 1.
type attentionError struct{ error }

func (e attentionError) Unwrap() error { return e.error }

func attention(err error) error { return attentionError{err} }

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
		err := o.Run(c.Context())
		settleOwnRequests(c.Context(), c.Name())
		return err
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
	case errors.Is(err, errReported):
		return exitError
	}
	// One line, as kubectl prints errors (an API error may span several),
	// then the usage hint of a flag error on its own line, as kubectl does.
	msg, hint, _ := strings.Cut(render.ErrorMessage(err), usageHint)
	// cobra's "Did you mean this?" goes under the error, as kubectl prints it.
	msg, suggestions, _ := strings.Cut(msg, didYouMean)
	msg = withAdvice(msg, err)
	fmt.Fprintf(streams.ErrOut, "error: %s\n", render.Printable(strings.Join(strings.Fields(msg), " ")))
	if suggestions != "" {
		fmt.Fprintf(streams.ErrOut, "%s%s\n", strings.TrimPrefix(didYouMean, "\n"), strings.TrimRight(suggestions, "\n"))
	}
	if hint != "" {
		fmt.Fprintf(streams.ErrOut, "%s%s\n", strings.TrimPrefix(usageHint, "\n"), strings.TrimSpace(hint))
	}
	if errors.As(err, new(attentionError)) {
		return exitAttention
	}
	return exitError
}

// withAdvice adds to msg what the command line has to say of err: a
// refused step ends with the one to take instead, as a command line, and
// a library error with its hint.
func withAdvice(msg string, err error) string {
	var refusal *stages.Refusal
	var unknown *stages.UnknownVersionError
	switch {
	case errors.As(err, &refusal) && refusal.Instead != nil && errors.As(err, &unknown):
		msg += "; to introduce " + unknown.Version + ": " + render.Command(*refusal.Instead)
	case errors.As(err, &refusal) && refusal.Instead != nil:
		msg += "; run: " + render.Command(*refusal.Instead)
	}
	if h := hintFor(err); h != "" {
		msg += " (" + h + ")"
	}
	return msg
}

// hintFor is what the command line adds to an error of the library: the
// flag, file or command that answers it, which a library caller does not
// have.
func hintFor(err error) string {
	var forbidden *cluster.ForbiddenError
	var jsonFile *manifest.JSONError
	var text *manifest.NotEditableError
	var stale *verify.StaleRecordError
	switch {
	case errors.As(err, &forbidden):
		return "the plugin's deploy/rbac/ holds a ClusterRole for each command"
	case errors.As(err, &jsonFile):
		return "convert it to YAML, or make the change by hand; kubectl create --dry-run=client -o yaml -f " + jsonFile.Path + " prints it as YAML"
	case errors.As(err, &text):
		return map[manifest.TextForm]string{
			manifest.InAList:   "split the List, one document per CRD, and run it again",
			manifest.CRLF:      "dos2unix " + text.Path + " converts it; then run it again",
			manifest.FlowStyle: "write it in block style and run it again",
		}[text.Form]
	case errors.Is(err, migration.ErrClusterMigratorNotServed):
		return "migrate without --via=cluster"
	case errors.Is(err, migration.ErrNotProven):
		return "--via=plugin checks each object; --accept-loss re-stores anyway"
	case errors.Is(err, migration.ErrStorageMigrating):
		return "--force migrates anyway"
	case errors.Is(err, migration.ErrChangedMeanwhile), errors.Is(err, migration.ErrStillServed):
		return "kubectl crdversion status shows where it stands"
	case errors.As(err, &stale):
		return "kubectl annotate crd " + stale.CRD + " " + stale.Annotation + "- removes it"
	case errors.Is(err, verify.ErrConverterUnproven):
		return "create one object at that version, then run it again"
	case errors.Is(err, manifest.ErrStepsUnreadable):
		return "remove the annotation, or put back what promote -f wrote there"
	case errors.Is(err, manifest.ErrNotOffline):
		return "write it in the file yourself; the steps after it are promote's"
	case errors.Is(err, migration.ErrServingNotInEffect):
		return "the CRD's conditions say why: kubectl get crd NAME -o yaml"
	case errors.Is(err, migration.ErrClusterMigrating):
		return "kubectl crdversion status follows it"
	case errors.Is(err, migration.ErrKeepsChanging):
		return "try again when it settles"
	case errors.Is(err, manifest.ErrNotInPlace):
		return "edit it by hand"
	}
	return ""
}
