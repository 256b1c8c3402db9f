package render

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"k8s.io/cli-runtime/pkg/printers"
)

// table draws columns with kubectl's own tab writer, so they line up
// exactly as kubectl's do; no trailing blanks (output can be diffed and
// grepped).
type table struct {
	out     io.Writer
	header  []string
	headers bool
	rows    [][]string
	// width, when set, is the columns each line may take: the last
	// column's cells (the longest words) are cut to fit, then any line
	// still longer.
	width int
}

func newTable(w io.Writer, header ...string) *table {
	return newTableWith(w, true, header...)
}

// newTableWith leaves the header out when headers is false (--no-headers).
func newTableWith(w io.Writer, headers bool, header ...string) *table {
	return &table{out: w, header: header, headers: headers}
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
	t.rows = append(t.rows, cells)
	return nil
}

// columnGap is the blanks kubectl's tab writer puts between columns.
const columnGap = 3

// minLastColumn is what a cut leaves of the last column at the least.
const minLastColumn = 20

func (t *table) Render() error {
	rows := t.rows
	if t.headers {
		rows = append([][]string{t.header}, rows...)
	}
	if t.width > 0 {
		t.fitLastColumn(rows)
	}
	var buf bytes.Buffer
	tw := printers.GetNewTabWriter(&buf)
	for _, cells := range rows {
		if _, err := fmt.Fprintln(tw, strings.Join(cells, "\t")); err != nil {
			return err
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var out strings.Builder
	for line := range strings.Lines(buf.String()) {
		out.WriteString(fitTo(strings.TrimRight(line, " \n"), t.width))
		out.WriteByte('\n')
	}
	_, err := io.WriteString(t.out, out.String())
	return err
}

// fitLastColumn cuts the last cell of each row to what the other columns
// leave of the width.
func (t *table) fitLastColumn(rows [][]string) {
	if len(rows) == 0 || len(rows[0]) < 2 {
		return
	}
	last := len(rows[0]) - 1
	widths := make([]int, last)
	for _, cells := range rows {
		for i := 0; i < last && i < len(cells); i++ {
			widths[i] = max(widths[i], utf8.RuneCountInString(cells[i]))
		}
	}
	avail := t.width
	for _, w := range widths {
		avail -= w + columnGap
	}
	avail = max(avail, minLastColumn)
	for _, cells := range rows {
		if len(cells) > last {
			cells[last] = fitTo(cells[last], avail)
		}
	}
}

// fitTo shortens line to width columns, ending it with "…"; width 0 keeps it.
func fitTo(line string, width int) string {
	if width <= 0 || utf8.RuneCountInString(line) <= width {
		return line
	}
	r := []rune(line)
	return string(r[:width-1]) + "…"
}
