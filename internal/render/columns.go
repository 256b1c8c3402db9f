package render

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"k8s.io/client-go/util/jsonpath"
)

// Custom columns take kubectl's spec (NAME:JSONPATH,NAME:JSONPATH, or a
// file of two lines: the names, then the paths under them) and the same
// JSONPath library kubectl evaluates them with. A report's rows are its
// items (status, usage, migrate, ...) or its findings (check), else the
// document itself; a path that finds nothing shows <none>, as kubectl's.

// column is one custom column: its header and its compiled path.
type column struct {
	header string
	path   *jsonpath.JSONPath
}

// customColumns reads -o custom-columns=SPEC or -o custom-columns-file=FILE.
func customColumns(format string) ([]column, error) {
	kind, arg, _ := strings.Cut(format, "=")
	var headers, paths []string
	switch kind {
	case "custom-columns":
		for _, part := range strings.Split(arg, ",") {
			h, p, ok := strings.Cut(part, ":")
			if !ok || h == "" || p == "" {
				return nil, fmt.Errorf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part)
			}
			headers, paths = append(headers, h), append(paths, p)
		}
	case "custom-columns-file":
		raw, err := os.ReadFile(arg)
		if err != nil {
			return nil, fmt.Errorf("error reading template %s, %v", arg, err)
		}
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		if len(lines) != 2 {
			return nil, fmt.Errorf("%s: a custom-columns file has two lines, the headers and the paths under them", arg)
		}
		headers, paths = strings.Fields(lines[0]), strings.Fields(lines[1])
		if len(headers) != len(paths) {
			return nil, fmt.Errorf("%s: %d headers and %d paths", arg, len(headers), len(paths))
		}
	}
	cols := make([]column, len(headers))
	for i, p := range paths {
		jp := jsonpath.New(headers[i]).AllowMissingKeys(true)
		if err := jp.Parse(relaxed(p)); err != nil {
			return nil, fmt.Errorf("unexpected path string %q: %v", p, err)
		}
		cols[i] = column{header: headers[i], path: jp}
	}
	return cols, nil
}

// relaxed is kubectl's reading of a column path: ".a.b" or "{.a.b}".
func relaxed(p string) string {
	if strings.HasPrefix(p, "{") {
		return p
	}
	return "{" + strings.TrimPrefix(p, "{") + "}"
}

// writeColumns prints the rows of doc under the columns.
func writeColumns(w io.Writer, format string, doc map[string]any) error {
	cols, err := customColumns(format)
	if err != nil {
		return err
	}
	rows := []any{doc}
	for _, key := range []string{"items", "findings"} {
		if items, ok := doc[key].([]any); ok {
			rows = items
			break
		}
	}
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = c.header
	}
	t := newTable(w, header...)
	for _, row := range rows {
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = cell(c.path, row)
		}
		if err := t.Append(cells...); err != nil {
			return err
		}
	}
	return t.Render()
}

// cell is what a column's path finds in row, as kubectl prints it.
func cell(jp *jsonpath.JSONPath, row any) string {
	results, err := jp.FindResults(row)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return "<none>"
	}
	var vals []string
	for _, r := range results[0] {
		if !r.IsValid() || (r.Kind() == reflect.Interface && r.IsNil()) {
			continue
		}
		var b bytes.Buffer
		if err := jp.PrintResults(&b, []reflect.Value{r}); err != nil {
			return "<none>"
		}
		vals = append(vals, b.String())
	}
	if len(vals) == 0 {
		return "<none>"
	}
	return strings.Join(vals, ",")
}
