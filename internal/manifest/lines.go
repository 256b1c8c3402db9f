package manifest

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The YAML parser counts a line at every LF, CR, CR LF, NEL (U+0085), LS
// (U+2028) and PS (U+2029): its positions are lines of those, so every
// edit counts lines the same way, or it would land on another line.
var breaks = []string{"\r\n", "\n", "\r", "\u0085", "\u2028", "\u2029"}

// breakAt is the length of the line break that starts s, or 0.
func breakAt(s string) int {
	for _, b := range breaks {
		if strings.HasPrefix(s, b) {
			return len(b)
		}
	}
	return 0
}

// lineEnd is the offset in s of its first line break, or len(s).
func lineEnd(s string) int {
	for i := range s {
		if breakAt(s[i:]) > 0 {
			return i
		}
	}
	return len(s)
}

// trimBreak drops the line break a line ends with.
func trimBreak(line string) string {
	for _, b := range breaks {
		if t, ok := strings.CutSuffix(line, b); ok {
			return t
		}
	}
	return line
}

// offset turns a 1-based line and column (the parser counts columns in
// characters) into a byte offset.
func (f *File) offset(line, column int) int {
	src := string(f.src)
	off := 0
	for l := 1; l < line; l++ {
		end := lineEnd(src[off:])
		if off+end == len(src) {
			return -1
		}
		off += end + breakAt(src[off+end:])
	}
	for c := 1; c < column && off < len(src); c++ {
		_, size := utf8.DecodeRuneInString(src[off:])
		off += size
	}
	return off
}

// lines splits the file after each line break, as the parser counts them.
func (f *File) lines() []string {
	src := string(f.src)
	var out []string
	for {
		end := lineEnd(src)
		if end == len(src) {
			return append(out, src)
		}
		end += breakAt(src[end:])
		out, src = append(out, src[:end]), src[end:]
	}
}

// deleteLines removes lines from..to (1-based, inclusive).
func (f *File) deleteLines(from, to int) error {
	lines := f.lines()
	if from < 1 || to < from || to > len(lines) {
		return fmt.Errorf("cannot delete lines %d-%d of %d", from, to, len(lines))
	}
	f.setLines(lines, strings.Join(append(lines[:from-1:from-1], lines[to:]...), ""))
	return nil
}

// insertLine inserts text as line number at (1-based).
func (f *File) insertLine(at int, text string) error {
	lines := f.lines()
	if at < 1 || at > len(lines)+1 {
		return fmt.Errorf("cannot insert at line %d of %d", at, len(lines))
	}
	if at > 1 && trimBreak(lines[at-2]) == lines[at-2] {
		lines[at-2] += f.newline()
	}
	out := append(append(lines[:at-1:at-1], text+f.newline()), lines[at-1:]...)
	f.setLines(lines, strings.Join(out, ""))
	return nil
}

// blockEnd is the last line of the block that starts at node n: the line
// before the next line that holds a key or sequence item indented at most
// to column (0-based) — or a "---" — less the comment lines right above
// it, which belong to what follows.
func (f *File) blockEnd(n *yaml.Node, column int) int {
	lines := f.lines()
	end := len(lines)
	if lines[len(lines)-1] == "" {
		end--
	}
	for l := n.Line + 1; l <= len(lines); l++ {
		s := trimBreak(lines[l-1])
		trimmed := strings.TrimLeft(s, " ")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") || len(s)-len(trimmed) <= column {
			end = l - 1
			break
		}
	}
	for end > n.Line {
		s := strings.TrimSpace(lines[end-1])
		if s != "" && !strings.HasPrefix(s, "#") {
			break
		}
		end--
	}
	return end
}

// headCommentStart is the first line of the comment lines directly above
// line, which describe what starts there and go with it.
func (f *File) headCommentStart(line int) int {
	lines := f.lines()
	for line > 1 && strings.HasPrefix(strings.TrimSpace(lines[line-2]), "#") {
		line--
	}
	return line
}

// linesText is lines from..to (1-based, inclusive), line breaks included.
func (f *File) linesText(from, to int) string {
	lines := f.lines()
	if from < 1 || to < from || to > len(lines) {
		return ""
	}
	return strings.Join(lines[from-1:to], "")
}

// replaceLines puts text (whole lines, breaks included) in place of lines
// from..to; with to = from-1 it inserts text before line from.
func (f *File) replaceLines(from, to int, text string) error {
	lines := f.lines()
	if from < 1 || to < from-1 || to > len(lines) {
		return fmt.Errorf("cannot replace lines %d-%d of %d", from, to, len(lines))
	}
	if from > 1 && text != "" && trimBreak(lines[from-2]) == lines[from-2] {
		lines[from-2] += f.newline()
	}
	f.setLines(lines, strings.Join(lines[:from-1], "")+text+strings.Join(lines[to:], ""))
	return nil
}

// setLines makes src the file's text, ending as the file did before an
// edit of its lines: a file without a line break at its end (lines, as it
// was, ends in a line of text, not "") keeps none, so that an edit and its
// inverse give the file back byte for byte.
func (f *File) setLines(lines []string, src string) {
	if lines[len(lines)-1] != "" {
		src = trimBreak(src)
	}
	f.src = []byte(src)
}
