package e2e

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What kubectl does, the plugin does, through kubectl's plugin dispatch:
// a mistyped command gets suggestions, a server that refuses is named by
// its host, a missing -f path is said as kubectl says it, a version that
// does not exist is named with the ones that do, -v shows requests and not
// client-go's feature gates, and -o completes every format.
func TestKubectlManners(t *testing.T) {
	e := newEnv(t, 30)

	r := e.plugin("stauts").mustCode(t, 1)
	contains(t, "mistyped command", r.stderr, `error: unknown command "stauts" for "kubectl crdversion"`, "\nDid you mean this?\n\tstatus\n")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: the connection is refused
	oneError(t, e.plugin("status", "--server", "https://"+addr).mustCode(t, 1),
		"error: The connection to the server "+addr+" was refused - did you specify the right host or port?")
	// The plugin says what the real kubectl says for the same server,
	// without linking kubectl's helper, on its one error: line.
	// A name lookup is compared up to the resolver's own answer, which two
	// lookups may word differently (no such host, a timeout).
	for _, server := range []string{"https://" + addr, "https://nowhere.invalid:6443"} {
		want := "error: " + lastLine(e.kubectl("get", "crd", "--server", server).mustCode(t, 1).stderr)
		got := lastLine(e.plugin("status", "--server", server).mustCode(t, 1).stderr)
		if lookup := "lookup nowhere.invalid"; strings.Contains(want, lookup) {
			want, _, _ = strings.Cut(want, lookup)
			got, _, _ = strings.Cut(got, lookup)
		}
		if got != want {
			t.Errorf("server %s: the plugin says\n %s\nkubectl says\n %s", server, got, want)
		}
	}

	missing := filepath.Join(t.TempDir(), "crds.yaml")
	oneError(t, e.plugin("check", "-f", missing).mustCode(t, 1), `error: the path "`+missing+`" does not exist`)
	oneError(t, e.plugin("status", "-f", missing).mustCode(t, 1), `error: the path "`+missing+`" does not exist`)
	oneError(t, e.plugin("promote", "clusterpolicies", "v2", "--from-file", missing).mustCode(t, 1), `error: the path "`+missing+`" does not exist`)

	before := e.crdVersions()
	oneError(t, e.plugin("promote", "backups", "v9").mustCode(t, 1),
		"error: backups.storage.example.com has no version v9; it has v1beta1, v1; to introduce v9: kubectl crdversion promote backups.storage.example.com v9 --from-file CRD_MANIFEST")
	sameCRDs(t, before, e.crdVersions())

	r = e.plugin("status", "clusterpolicies", "-v=6")
	if strings.Contains(r.stderr, "Feature gate") || !strings.Contains(r.stderr, `"Response" verb="GET"`) {
		t.Errorf("-v=6: want the requests and no feature gate lines:\n%s", r.stderr)
	}

	got := completions(e.plugin("__complete", "status", "-o", "").stdout)
	for _, want := range []string{"json", "yaml", "name", "wide", "jsonpath=", "jsonpath-as-json=", "jsonpath-file=", "go-template=", "go-template-file=", "template=", "templatefile=", "custom-columns=", "custom-columns-file="} {
		if !slices.Contains(got, want) {
			t.Errorf("-o completion %v lacks %s", got, want)
		}
	}
}

// A CRD printed with -o yaml leaves out managedFields, as kubectl does,
// unless --show-managed-fields; a manifest given for any step but the one
// that introduces a version is refused, not ignored.
func TestPromoteOutputAndManifestFlags(t *testing.T) {
	e := newEnv(t, 30)
	file := writeCRD(t, withV2(e.crd("clusterpolicies.policy.example.com")))

	r := e.plugin("promote", "clusterpolicies", "v2", "--from-file", file, "--dry-run=server", "-o", "yaml").mustCode(t, 0)
	if strings.Contains(r.stdout, "managedFields") || !strings.Contains(r.stdout, "name: v2") {
		t.Errorf("-o yaml: want the CRD with v2 and without managedFields:\n%s", r.stdout)
	}
	r = e.plugin("promote", "clusterpolicies", "v2", "--from-file", file, "--dry-run=server", "-o", "yaml", "--show-managed-fields").mustCode(t, 0)
	if !strings.Contains(r.stdout, "managedFields:") {
		t.Errorf("-o yaml --show-managed-fields: no managedFields:\n%s", r.stdout)
	}

	e.plugin("promote", "clusterpolicies", "v2", "--from-file", file).mustCode(t, 0)
	before := e.crdVersions()
	oneError(t, e.plugin("promote", "clusterpolicies", "v2", "--from-file", file).mustCode(t, 1),
		"a CRD manifest is taken only to introduce a version, and v2 is in clusterpolicies.policy.example.com already (its next stage is bridge); run: kubectl crdversion promote clusterpolicies.policy.example.com v2 --to bridge")
	sameCRDs(t, before, e.crdVersions())

	// Offline, the file to edit is left as it was.
	edited := writeCRD(t, e.crd("clusterpolicies.policy.example.com"))
	live, err := os.ReadFile(edited)
	if err != nil {
		t.Fatal(err)
	}
	oneError(t, offline(t, "promote", "-f", edited, "v2", "--from-file", file).mustCode(t, 1), "a CRD manifest is taken only to introduce a version")
	if after, err := os.ReadFile(edited); err != nil || string(after) != string(live) {
		t.Errorf("the file changed on a refused step (%v)", err)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// kubectl's flag habits: -n where it cannot apply is said, not ignored; an
// -o value a command does not take is refused listing exactly those it
// takes; a bare --dry-run is client, with kubectl's deprecation warning.
func TestKubectlFlagHabits(t *testing.T) {
	e := newEnv(t, 30)

	r := e.plugin("status", "cert", "-n", "team-a").mustCode(t, 0)
	contains(t, "status -n", r.stderr, "warning: -n/--namespace has no effect")

	r = e.plugin("status", "-o", "markdown").mustCode(t, 1)
	oneError(t, r, `error: unable to match a printer suitable for the output format "markdown", allowed formats are: json,yaml,name,`)
	if !strings.Contains(r.stderr, ",wide\n") {
		t.Errorf("status's formats should end with wide: %s", r.stderr)
	}
	r = e.plugin("check", "-f", "-", "-o", "wide").mustCode(t, 1)
	if !strings.Contains(r.stderr, ",markdown\n") || strings.Contains(r.stderr, "wide,") {
		t.Errorf("check's formats: %s", r.stderr)
	}

	before := e.crdVersions()
	r = e.plugin("promote", "backups", "v1", "--dry-run").mustCode(t, 0)
	contains(t, "bare --dry-run", r.stderr, "--dry-run is deprecated and can be replaced with --dry-run=client.")
	contains(t, "bare --dry-run", r.stdout, "(dry run: nothing sent)")
	sameCRDs(t, before, e.crdVersions())
}
