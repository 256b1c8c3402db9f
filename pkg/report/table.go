package report

import (
	"bytes"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// table draws the way kubectl draws its own: no borders or rules,
// left-aligned columns three spaces apart, headers as written, no trailing
// blanks (so output can be diffed and grepped).
type table struct {
	out io.Writer
	buf bytes.Buffer
	tw  *tablewriter.Table
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{out: w}
	t.tw = tablewriter.NewTable(&t.buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Settings: tw.Settings{
				Separators: tw.SeparatorsNone,
				Lines:      tw.LinesNone,
			},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "   ", Overwrite: true}),
		tablewriter.WithTrimSpace(tw.Off),
	)
	t.tw.Header(header)
	return t
}

func (t *table) Append(row ...string) error { return t.tw.Append(row) }

func (t *table) Render() error {
	if err := t.tw.Render(); err != nil {
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
