package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// tourObjects is what the README's tour was run on: the demo's 6,000.
const tourObjects = 6000

// timing is what differs from run to run: a duration, and a rate after
// it; the clock time a wait is dated by; how long a wait has left.
var (
	timing  = regexp.MustCompile(`\([0-9.]+(ns|µs|ms|s|m)[^)]*\)`)
	clock   = regexp.MustCompile(`\b[0-2][0-9]:[0-5][0-9]:[0-5][0-9]\b`)
	waiting = regexp.MustCompile(`waiting ([0-9]+h)?([0-9]+m)?[0-9]+s\b`)
)

// transient are the lines a terminal rewrites in place and clears when
// they are done, written as lines where stderr is no terminal: a pass's
// progress and a wait's countdown.
var transient = regexp.MustCompile(`(: [0-9]+/[0-9]+ objects, [0-9]+/s(, [0-9]+ in flight)?, ETA \S+|: ([0-9]+h)?([0-9]+m)?[0-9]+s left)$`)

// The README's five-minute tour shows the plugin's real output: each
// console block is run, in order, exactly as printed, against the demo's
// sandbox, on one machine new to it (its HOME, and so kubectl's cache,
// kept from block to block, as a newcomer's), and what stays on the screen
// (stdout and stderr as they interleave, without the progress and
// countdown lines a terminal rewrites in place) must be what the README
// shows, but for the time taken and the clock.
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
	home := t.TempDir()
	for _, b := range blocks {
		cmd, ok := strings.CutPrefix(b[0], "$ kubectl crdversion ")
		if !ok {
			t.Fatalf("console block starts with %q, not a plugin command", b[0])
		}
		got := onScreen(t, e, home, append([]string{"crdversion"}, strings.Fields(cmd)...)...)
		want := b[1:]
		if normalise(got) != normalise(want) {
			t.Errorf("README shows for %q:\n%s\nthe plugin prints:\n%s", b[0], strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
	}
}

// onScreen runs kubectl ARGS as a user on the machine of home and returns
// what stays on the screen, a line a string.
func onScreen(t *testing.T, e *env, home string, args ...string) []string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.sb.KubeconfigPath(), "HOME="+home)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out // one pipe: the order they were written in
	if err := cmd.Run(); err != nil {
		if _, exited := err.(*exec.ExitError); !exited {
			t.Fatal(err)
		}
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if !transient.MatchString(l) {
			lines = append(lines, l)
		}
	}
	return lines
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
		l = timing.ReplaceAllString(l, "(TIME)")
		l = clock.ReplaceAllString(l, "HH:MM:SS")
		l = waiting.ReplaceAllString(l, "waiting TIME")
		out[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(out, "\n")
}
