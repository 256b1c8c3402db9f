package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"
)

// Format is an -o value.
type Format string

const (
	FormatTable Format = ""
	FormatWide  Format = "wide"
	FormatJSON  Format = "json"
	FormatYAML  Format = "yaml"
	// FormatName prints the CRDs a report is about as kubectl's -o name does.
	FormatName Format = "name"
	// FormatMarkdown is release-note sections, for check.
	FormatMarkdown Format = "markdown"
)

// Templates are the -o values that take a template (-o NAME=...), as
// kubectl's do.
var Templates = []string{"go-template", "go-template-file", "template", "templatefile", "jsonpath", "jsonpath-as-json", "jsonpath-file", "custom-columns", "custom-columns-file"}

// ParseFormat accepts "" and "table" as the default table, and every
// document format kubectl has.
func ParseFormat(s string) (Format, error) {
	switch s {
	case "", "table":
		return FormatTable, nil
	case "wide", "json", "yaml", "name", "markdown":
		return Format(s), nil
	}
	if kind, tmpl, _ := strings.Cut(s, "="); slices.Contains(Templates, kind) {
		if tmpl == "" {
			return "", fmt.Errorf("template format specified but no template given")
		}
		return Format(s), nil
	}
	return "", fmt.Errorf("%w: %q", ErrUnknownFormat, s)
}

// ErrUnknownFormat is an -o value no printer takes; the command refuses
// it in kubectl's words, with the values it takes.
var ErrUnknownFormat = errors.New("unknown output format")

// Document reports a format that prints the report's document (JSON,
// YAML, a template over it, or the names in it) rather than a table.
func (f Format) Document() bool {
	return f != FormatTable && f != FormatWide && f != FormatMarkdown
}

// writeDocument prints doc as indented JSON, as YAML, through a kubectl
// template printer (jsonpath, go-template), or as the names of the CRDs it
// is about.
func writeDocument(w io.Writer, f Format, doc any) error {
	raw, err := json.MarshalIndent(doc, "", "    ")
	if err != nil {
		return err
	}
	switch f {
	case FormatJSON:
		_, err = fmt.Fprintf(w, "%s\n", raw)
		return err
	case FormatYAML:
		if raw, err = yaml.JSONToYAML(raw); err != nil {
			return err
		}
		_, err = w.Write(raw)
		return err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return err
	}
	if f == FormatName {
		return writeNames(w, u.Object)
	}
	if strings.HasPrefix(string(f), "custom-columns") {
		return writeColumns(w, string(f), u.Object)
	}
	format := string(f)
	pf := genericclioptions.NewPrintFlags("").WithDefaultOutput(format)
	pf.OutputFormat = &format
	p, err := pf.ToPrinter()
	if err != nil {
		return err
	}
	return p.PrintObj(u, w)
}

// writeNames prints, one a line, the CRDs a document is about, as
// customresourcedefinition.apiextensions.k8s.io/NAME like kubectl's -o name.
func writeNames(w io.Writer, doc map[string]any) error {
	var names []string
	add := func(m map[string]any) {
		n, _, _ := unstructured.NestedString(m, "metadata", "name")
		for _, k := range []string{"name", "crd"} {
			if n == "" {
				n, _ = m[k].(string)
			}
		}
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	add(doc)
	for _, list := range []string{"items", "findings"} {
		items, _ := doc[list].([]any)
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				add(m)
			}
		}
	}
	if len(names) == 0 && doc["kind"] == "Version" {
		return errors.New("-o name: the version names no CRD")
	}
	for _, n := range names {
		if _, err := fmt.Fprintf(w, "customresourcedefinition.apiextensions.k8s.io/%s\n", n); err != nil {
			return err
		}
	}
	return nil
}
