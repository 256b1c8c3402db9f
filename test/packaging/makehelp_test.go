package packaging

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// make help is how a newcomer finds the targets: it runs cleanly, and
// every .PHONY target the Makefile documents with a ## comment is listed
// with that comment's text.
func TestMakeHelpListsEveryDocumentedTarget(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	documented := documentedPhonyTargets(t)
	if len(documented) == 0 {
		t.Fatal("the Makefile's .PHONY targets have no ## comments: the Makefile has moved on from this test")
	}

	cmd := exec.CommandContext(t.Context(), "make", "help")
	cmd.Dir = root
	// As a user at a shell runs it, not as a make running this test does.
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("make help: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("make help wrote to stderr:\n%s", stderr.String())
	}
	out := stdout.String()
	for _, target := range documented {
		line := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(target.name) + `\s+` + regexp.QuoteMeta(target.help) + `\s*$`)
		if !line.MatchString(out) {
			t.Errorf("make help does not list %s with %q:\n%s", target.name, target.help, out)
		}
	}
}

type documentedTarget struct{ name, help string }

// documentedPhonyTargets reads the Makefile: the targets its .PHONY lines
// name whose rule line carries a ## comment, in the Makefile's order.
func documentedPhonyTargets(t *testing.T) []documentedTarget {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(raw), "\\\n", " ")
	phony := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\.PHONY\s*:(.*)$`).FindAllStringSubmatch(text, -1) {
		for _, name := range strings.Fields(m[1]) {
			phony[name] = true
		}
	}
	if len(phony) == 0 {
		t.Fatal("the Makefile has no .PHONY line")
	}
	// A rule line as make help's awk reads it: the text after the last "## ".
	rule := regexp.MustCompile(`(?m)^([a-zA-Z0-9_-]+):.*## (.*)$`)
	var documented []documentedTarget
	for _, m := range rule.FindAllStringSubmatch(text, -1) {
		if phony[m[1]] {
			documented = append(documented, documentedTarget{m[1], strings.TrimSpace(m[2])})
		}
	}
	return documented
}
