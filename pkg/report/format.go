package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"
)

// Format is an -o value.
type Format string

const (
	FormatTable Format = ""
	FormatWide  Format = "wide"
	FormatJSON  Format = "json"
	FormatYAML  Format = "yaml"
	// FormatMarkdown is release-note sections, for check.
	FormatMarkdown Format = "markdown"
)

// Formats lists the accepted -o values, for the error that refuses another.
var Formats = []string{"table", "wide", "json", "yaml", "markdown"}

// ParseFormat accepts "" and "table" as the default table.
func ParseFormat(s string) (Format, error) {
	switch s {
	case "", "table":
		return FormatTable, nil
	case "wide", "json", "yaml", "markdown":
		return Format(s), nil
	}
	return "", fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: %s", s, strings.Join(Formats, ","))
}

// APIVersion versions every document the plugin prints with -o json|yaml.
const APIVersion = "crdversion.kubectl.io/v1alpha1"

// writeDocument prints doc as indented JSON or as YAML.
func writeDocument(w io.Writer, f Format, doc any) error {
	raw, err := json.MarshalIndent(doc, "", "    ")
	if err != nil {
		return err
	}
	if f == FormatYAML {
		if raw, err = yaml.JSONToYAML(raw); err != nil {
			return err
		}
		_, err = w.Write(raw)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", raw)
	return err
}
