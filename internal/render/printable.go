package render

import (
	"fmt"
	"strings"
	"unicode"
)

// Printable escapes what a terminal would act on rather than show: control
// characters (an ESC sequence in a name read from a file could move the
// cursor or hide text) and the Unicode line and paragraph separators, as
// Go's %q writes them. Plain text is returned as it is.
func Printable(s string) string {
	if !strings.ContainsFunc(s, hidden) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			q := fmt.Sprintf("%+q", string(r))
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hidden(r rune) bool {
	return (unicode.IsControl(r) && r != '\n' && r != '\t') || r == '\u2028' || r == '\u2029'
}
