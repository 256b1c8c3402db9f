package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// Command spells a step of the plugin as the command line that takes it.
func Command(s lifecycle.Step) string {
	args := []string{"kubectl", "crdversion", string(s.Op)}
	if s.File != "" {
		args = append(args, "-f", s.File)
	}
	for _, a := range []string{s.CRD, s.Version} {
		if a != "" {
			args = append(args, a)
		}
	}
	if s.All {
		args = append(args, "--all")
	}
	if s.To != "" {
		args = append(args, "--to", string(s.To))
	}
	if s.FromFile != "" {
		args = append(args, "--from-file", s.FromFile)
	}
	if s.AgainstFile != "" {
		args = append(args, "--against-file", s.AgainstFile)
	}
	if s.ConversionFromFile {
		args = append(args, "--conversion-from-file")
	}
	switch {
	case len(s.CleanVersions) > 0:
		args = append(args, "--clean-managed-fields-of="+strings.Join(s.CleanVersions, ","))
	case s.CleanManagedFields:
		args = append(args, "--clean-managed-fields")
	}
	if s.SwitchStorage {
		args = append(args, "--switch-storage")
	}
	if s.AcceptLoss {
		args = append(args, "--accept-loss")
	}
	if s.Context != "" {
		args = append(args, "--context", s.Context)
	}
	return strings.Join(args, " ")
}

// Advice is advice as one line: its text, then the command that does it.
func Advice(a lifecycle.Advice) string {
	if a.Step == nil {
		return a.Text
	}
	return fmt.Sprintf("%s: %s", a.Text, Command(*a.Step))
}

// spelled is advice with its commands filled in, for the readers of a
// document, who have the steps but not how the plugin spells them.
func spelled(advice []lifecycle.Advice) []lifecycle.Advice {
	out := slices.Clone(advice)
	for i, a := range out {
		if a.Step != nil {
			out[i].Command = Command(*a.Step)
		}
	}
	return out
}

// nextCell is the step a status row ends with.
func nextCell(n lifecycle.Next) string {
	if n.Step == nil {
		return fmt.Sprintf("%s: %s", n.Action, n.Reason)
	}
	return fmt.Sprintf("%s: %s (%s)", n.Action, Command(*n.Step), n.Reason)
}
