package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
)

// outputNames are the -o values a command takes besides its default: its
// document as JSON or YAML, the names of the CRDs in it, a kubectl
// template over it, and the ones of extra (wide, markdown) it renders.
func outputNames(extra []render.Format) []string {
	names := append([]string{"json", "yaml", "name"}, render.Templates...)
	for _, f := range extra {
		names = append(names, string(f))
	}
	return names
}

// addOutputFlag adds -o and --template to cmd; value gets -o as
// parseOutput reads it. Completion offers every value, a template's name
// with its "=".
func addOutputFlag(cmd *cobra.Command, value *string, extra ...render.Format) {
	names := outputNames(extra)
	o := &outputAndTemplate{value: value}
	cmd.Flags().VarP(joinedPart{o, &o.output}, "output", "o", fmt.Sprintf("Output format. One of: (%s).", strings.Join(names, ", ")))
	cmd.Flags().Var(joinedPart{o, &o.template}, "template", "Template string or path to template file to use when -o=go-template, -o=go-template-file, -o=jsonpath or -o=jsonpath-file; without -o, go-template.")
	completions := make([]string, len(names))
	for i, n := range names {
		if slices.Contains(render.Templates, n) {
			n += "="
		}
		completions[i] = n
	}
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return completions, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
}

// parseOutput reads -o: the default, a document format, or one of extra.
// A value it does not take is refused in kubectl's words, listing exactly
// the values this command takes.
func parseOutput(value string, extra ...render.Format) (render.Format, error) {
	f, err := render.ParseFormat(value)
	switch {
	case err == nil && (f == render.FormatTable || f.Document() || slices.Contains(extra, f)):
		return f, nil
	case err != nil && !errors.Is(err, render.ErrUnknownFormat):
		return "", err // a template format without its template
	}
	return "", noPrinter(value, outputNames(extra))
}

// noPrinter refuses an -o value in kubectl's words, naming the ones taken.
func noPrinter(value string, taken []string) error {
	return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: %s", value, strings.Join(taken, ","))
}

// outputAndTemplate joins -o and --template into one -o value as kubectl
// takes them: -o jsonpath --template='{.items}' is -o jsonpath='{.items}',
// and --template alone is a go-template. Either flag may come first.
type outputAndTemplate struct {
	value            *string
	output, template string
}

func (o *outputAndTemplate) join() {
	out := o.output
	switch {
	case o.template == "" || strings.Contains(out, "="):
	case out == "":
		out = "go-template=" + o.template
	case slices.Contains(render.Templates, out):
		out += "=" + o.template
	}
	*o.value = out
}

// joinedPart is -o or --template: it sets its own part, then the join.
type joinedPart struct {
	*outputAndTemplate
	part *string
}

func (p joinedPart) String() string { return *p.part }
func (p joinedPart) Type() string   { return "string" }
func (p joinedPart) Set(s string) error {
	*p.part = s
	p.join()
	return nil
}
