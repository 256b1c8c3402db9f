package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// tourObjects is what the README's tour was run on: the demo's 6,000.
const tourObjects = 6000

// timing is what differs from run to run: a duration, and a rate after it.
var timing = regexp.MustCompile(`\([0-9.]+(ns|µs|ms|s|m)[^)]*\)`)

// The README's five-minute tour shows the plugin's real output: each
// console block is run, in order, against the demo's sandbox, and what the
// plugin prints must be what the README shows, but for the time taken.
// Migrations run with --switch-grace=0: the README's sandbox was switched
// long before, and the test's a moment ago.
func TestReadmeTourIsWhatThePluginPrints(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := consoleBlocks(string(readme))
	if len(blocks) < 3 {
		t.Fatalf("README has %d console blocks: the tour is gone", len(blocks))
	}
	e := newEnv(t, tourObjects)
	for _, b := range blocks {
		cmd, ok := strings.CutPrefix(b[0], "$ kubectl crdversion ")
		if !ok {
			t.Fatalf("console block starts with %q, not a plugin command", b[0])
		}
		args := strings.Fields(cmd)
		if args[0] == "migrate" {
			args = append(args, "--switch-grace=0", "-q")
		}
		got := strings.Split(strings.TrimRight(e.plugin(args...).stdout, "\n"), "\n")
		want := b[1:]
		if normalise(got) != normalise(want) {
			t.Errorf("README shows for %q:\n%s\nthe plugin prints:\n%s", b[0], strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
	}
}

// consoleBlocks are the README's ```console blocks, a line a string.
func consoleBlocks(md string) [][]string {
	var out [][]string
	var cur []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		switch {
		case !in && line == "```console":
			in, cur = true, nil
		case in && line == "```":
			in = false
			out = append(out, cur)
		case in:
			cur = append(cur, line)
		}
	}
	return out
}

func normalise(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimRight(timing.ReplaceAllString(l, "(TIME)"), " ")
	}
	return strings.Join(out, "\n")
}
