package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"k8s.io/cli-runtime/pkg/printers"
)

// table draws columns with kubectl's own tab writer, so they line up
// exactly as kubectl's do; no trailing blanks (output can be diffed and
// grepped).
type table struct {
	out io.Writer
	buf bytes.Buffer
	tw  io.Writer
	tab interface{ Flush() error }
}

func newTable(w io.Writer, header ...string) *table {
	return newTableWith(w, true, header...)
}

// newTableWith leaves the header out when headers is false (--no-headers).
func newTableWith(w io.Writer, headers bool, header ...string) *table {
	t := &table{out: w}
	tw := printers.GetNewTabWriter(&t.buf)
	t.tw, t.tab = tw, tw
	if headers {
		_ = t.Append(header...)
	}
	return t
}

var oneLine = strings.NewReplacer("\t", " ", "\r\n", " ", "\n", " ")

// Append adds a row; a tab or a line break inside a cell would break the
// columns, so it becomes a space, and what a terminal would act on is
// escaped.
func (t *table) Append(row ...string) error {
	cells := make([]string, len(row))
	for i, c := range row {
		cells[i] = Printable(oneLine.Replace(c))
	}
	_, err := fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
	return err
}

func (t *table) Render() error {
	if err := t.tab.Flush(); err != nil {
		return err
	}
	var out strings.Builder
	for line := range strings.Lines(t.buf.String()) {
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	_, err := io.WriteString(t.out, out.String())
	return err
}
