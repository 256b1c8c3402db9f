package manifest

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// offset turns a 1-based line and column into a byte offset.
func (f *File) offset(line, column int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(f.src[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off + column - 1
}

func (f *File) lines() []string { return strings.SplitAfter(string(f.src), "\n") }

// deleteLines removes lines from..to (1-based, inclusive).
func (f *File) deleteLines(from, to int) error {
	lines := f.lines()
	if from < 1 || to < from || to > len(lines) {
		return fmt.Errorf("cannot delete lines %d-%d of %d", from, to, len(lines))
	}
	f.src = []byte(strings.Join(append(lines[:from-1:from-1], lines[to:]...), ""))
	return nil
}

// insertLine inserts text as line number at (1-based).
func (f *File) insertLine(at int, text string) error {
	lines := f.lines()
	if at < 1 || at > len(lines)+1 {
		return fmt.Errorf("cannot insert at line %d of %d", at, len(lines))
	}
	if at > 1 && !strings.HasSuffix(lines[at-2], "\n") {
		lines[at-2] += "\n"
	}
	out := append(append(lines[:at-1:at-1], text+"\n"), lines[at-1:]...)
	f.src = []byte(strings.Join(out, ""))
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
		s := strings.TrimRight(lines[l-1], "\r\n")
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
