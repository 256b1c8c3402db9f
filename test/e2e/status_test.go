package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
)

const demoObjects = 60

func TestStatusAllCRDs(t *testing.T) {
	e := newEnv(t, demoObjects)
	before := e.crdVersions()

	// gadgets.example.com's storedVersions names a version gone from spec:
	// an error-level problem, so exit 3 after the full report.
	r := e.plugin("status").mustCode(t, 3)
	contains(t, "status", r.stdout,
		"CRD                                  VERSION    SERVED   STORAGE   DEPRECATED   STORED   STAGE",
		"certificates.pki.example.com         v1         yes      yes       no           yes      storage",
		"                                     v1alpha2   yes      no        yes          yes      deprecated",
		"backups.storage.example.com          v1         yes      no        no           no       introduced",
		"clusterpolicies.policy.example.com   v1         yes      yes       no           yes      storage",
		"gadgets.example.com                  v1         yes      yes       no           yes      storage",
		"                                     v1alpha1   no       no        no           yes      missing",
		"run: kubectl crdversion migrate certificates.pki.example.com (objects may still be stored at v1alpha2)",
		"ready: kubectl crdversion promote backups.storage.example.com v1 --to bridge",
		"status.storedVersions names v1alpha1, which is missing from spec.versions",
	)
	if r.stderr != "" {
		t.Errorf("stderr = %q, want nothing", r.stderr)
	}
	if after := e.crdVersions(); !maps.Equal(before, after) {
		t.Errorf("status changed CRDs: %v -> %v", before, after)
	}
}

func TestStatusResolvesNamesLikeKubectl(t *testing.T) {
	e := newEnv(t, demoObjects)
	for _, name := range []string{"certificates.pki.example.com", "certificates", "certificate", "cert", "Certificate", "certs.pki.example.com", "certificate.v1.pki.example.com"} {
		r := e.plugin("status", name).mustCode(t, 0)
		if !strings.Contains(r.stdout, "certificates.pki.example.com") || strings.Contains(r.stdout, "backups") {
			t.Errorf("status %s:\n%s", name, r.stdout)
		}
	}
	// Several names, one repeated: each CRD once, in the order given.
	r := e.plugin("status", "clusterpolicies", "cert", "certificates").mustCode(t, 0)
	versions, _, _ := strings.Cut(r.stdout, "\n\n")
	if strings.Count(versions, "\ncertificates.pki.example.com") != 1 {
		t.Errorf("repeated CRD listed more than once:\n%s", versions)
	}
	if strings.Index(versions, "clusterpolicies") > strings.Index(versions, "certificates") {
		t.Errorf("CRDs not in the order given:\n%s", versions)
	}
	// As kubectl get: what is found is shown, each name that finds nothing
	// is an error line after it, and the exit code is 1.
	r = e.plugin("status", "nosuch", "cert", "nothere").mustCode(t, 1)
	if !strings.Contains(r.stdout, "certificates.pki.example.com") {
		t.Errorf("status nosuch cert nothere left out what it found:\n%s", r.stdout)
	}
	if r.stderr != "error: customresourcedefinition \"nosuch\" not found\nerror: customresourcedefinition \"nothere\" not found\n" {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	oneError(t, e.plugin("status", "nosuch").mustCode(t, 1), `customresourcedefinition "nosuch" not found`)
}

func TestStatusWideCountsObjects(t *testing.T) {
	e := newEnv(t, demoObjects)
	r := e.plugin("status", "cert", "clusterpolicies", "-o", "wide").mustCode(t, 0)
	contains(t, "status -o wide", r.stdout, "OBJECTS", "WARNING",
		"pki.example.com/v1alpha2 Certificate is deprecated; use pki.example.com/v1 Certificate")
	// InstallDemo puts half the objects in certificates and the rest (less a
	// third for backups) in clusterpolicies.
	for crd, want := range map[string]int{"certificates.pki.example.com": demoObjects / 2, "clusterpolicies.policy.example.com": demoObjects - demoObjects/2 - demoObjects/3} {
		line := lineWith(r.stdout, crd)
		if !strings.Contains(line, " "+strconv.Itoa(want)+" ") && !strings.HasSuffix(line, " "+strconv.Itoa(want)) {
			t.Errorf("%s: want object count %d in %q", crd, want, line)
		}
	}
}

func TestStatusDocument(t *testing.T) {
	e := newEnv(t, demoObjects)
	r := e.plugin("status", "--group", "pki.example.com", "-o", "json").mustCode(t, 0)
	var doc report.StatusReport
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("-o json is not JSON: %v\n%s", err, r.stdout)
	}
	if doc.APIVersion != report.APIVersion || doc.Kind != "StatusReport" || len(doc.Items) != 1 {
		t.Fatalf("document = %+v", doc)
	}
	it := doc.Items[0]
	if it.Name != "certificates.pki.example.com" || it.StorageVersion != "v1" || strings.Join(it.StoredVersions, ",") != "v1alpha2,v1" || it.Next.Action != "run" {
		t.Errorf("item = %+v", it)
	}
	if len(it.Versions) != 2 || it.Versions[0].Name != "v1" || it.Versions[1].Stage != "deprecated" {
		t.Errorf("versions = %+v", it.Versions)
	}

	y := e.plugin("status", "cert", "-o", "yaml").mustCode(t, 0)
	contains(t, "-o yaml", y.stdout, "apiVersion: "+report.APIVersion, "kind: StatusReport", "storageVersion: v1")
}

func TestStatusLabelSelector(t *testing.T) {
	e := newEnv(t, demoObjects)
	if r := e.kubectl("label", "crd", "backups.storage.example.com", "tier=data"); r.code != 0 {
		t.Fatalf("labelling: %s", r.stderr)
	}
	r := e.plugin("status", "-l", "tier=data").mustCode(t, 0)
	if !strings.Contains(r.stdout, "backups.storage.example.com") || strings.Contains(r.stdout, "certificates") {
		t.Errorf("status -l tier=data:\n%s", r.stdout)
	}
	none := e.plugin("status", "-l", "tier=none").mustCode(t, 0)
	if none.stdout != "" || !strings.Contains(none.stderr, "No CustomResourceDefinitions found.") {
		t.Errorf("empty selection: stdout %q stderr %q", none.stdout, none.stderr)
	}
}

// -v as kubectl has it: at 6 every request and its answer go to stderr,
// and stdout is the same report.
func TestVerbosityShowsRequests(t *testing.T) {
	e := newEnv(t, demoObjects)
	quiet := e.plugin("status", "cert").mustCode(t, 0)
	loud := e.plugin("status", "cert", "-v", "6").mustCode(t, 0)
	contains(t, "status -v 6", loud.stderr, "customresourcedefinitions", "200 OK")
	if loud.stdout != quiet.stdout || quiet.stderr != "" {
		t.Errorf("-v changed the report or logged without it:\n%s\n---\n%s", quiet.stdout, loud.stdout)
	}
}

func TestVersionIsStamped(t *testing.T) {
	e := newEnv(t, 0)
	r := e.plugin("version").mustCode(t, 0)
	if !strings.HasPrefix(r.stdout, "kubectl-crdversion "+testVersion+" ") {
		t.Errorf("version = %q", r.stdout)
	}
	doc := e.plugin("version", "-o", "json").mustCode(t, 0)
	contains(t, "version -o json", doc.stdout, `"kind": "Version"`, `"version": "`+testVersion+`"`, `"platform": "`)
}

func TestCompletionThroughKubectl(t *testing.T) {
	e := newEnv(t, demoObjects)
	// kubectl (1.26+) runs kubectl_complete-crdversion from PATH to complete
	// a plugin's arguments.
	sub := e.kubectl("__complete", "crdversion", "st").mustCode(t, 0)
	contains(t, "completion of subcommands", sub.stdout, "status")
	names := e.kubectl("__complete", "crdversion", "status", "cert").mustCode(t, 0)
	contains(t, "completion of CRD names", names.stdout, "certificates.pki.example.com")
	if strings.Contains(names.stdout, "backups") {
		t.Errorf("completion ignores the prefix:\n%s", names.stdout)
	}
	// At the VERSION position: the versions of the CRD named, not CRD names.
	versions := e.kubectl("__complete", "crdversion", "promote", "cert", "").mustCode(t, 0)
	if got := completions(versions.stdout); strings.Join(got, ",") != "v1,v1alpha2" {
		t.Errorf("versions of certificates: %q\n%s", got, versions.stdout)
	}
	if got := completions(e.kubectl("__complete", "crdversion", "verify", "certificates.pki.example.com", "v1", "").mustCode(t, 0).stdout); strings.Join(got, ",") != "v1alpha2" {
		t.Errorf("verify's next version: %q", got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"promote", "cert", "v1", "--to", ""}, "introduced,bridge,deprecated,blocked,removed"},
		{[]string{"migrate", "--dry-run="}, "none,server"},
		{[]string{"status", "-o", ""}, "json,yaml,name,go-template=,go-template-file=,template=,templatefile=,jsonpath=,jsonpath-as-json=,jsonpath-file=,custom-columns=,custom-columns-file=,wide"},
		{[]string{"check", "-o", ""}, "json,yaml,name,go-template=,go-template-file=,template=,templatefile=,jsonpath=,jsonpath-as-json=,jsonpath-file=,custom-columns=,custom-columns-file=,markdown"},
		{[]string{"prune", "cert", ""}, ""},
	} {
		r := e.kubectl(append([]string{"__complete", "crdversion"}, tc.args...)...).mustCode(t, 0)
		if got := strings.Join(completions(r.stdout), ","); got != tc.want {
			t.Errorf("completing %q: %q, want %q", tc.args, got, tc.want)
		}
	}
	// completion prints the shim kubectl runs, and says how to install it.
	shim := e.plugin("completion").mustCode(t, 0)
	contains(t, "completion", shim.stdout, "exec kubectl crdversion __complete")
	contains(t, "completion --help", e.plugin("completion", "--help").mustCode(t, 0).stdout, "kubectl crdversion completion --install")
	// kubectl completion's habit, a shell as the argument, is answered
	// with how the plugin completes in that shell.
	oneError(t, e.plugin("completion", "bash").mustCode(t, 1), "the plugin has no bash script of its own", "source <(kubectl completion bash)", "kubectl crdversion completion --install")
}

// After a krew install, PATH holds krew's bin directory, whose
// kubectl-crdversion is a link into krew's store: --install writes the
// shim in that directory (the link is not followed), --uninstall takes it
// out again, as krew's uninstall would not.
func TestCompletionInstallBesideAKrewLink(t *testing.T) {
	plugin, err := exec.LookPath("kubectl-crdversion")
	if err != nil {
		t.Fatal(err)
	}
	store, bin := t.TempDir(), t.TempDir()
	if err := os.Symlink(plugin, filepath.Join(store, "kubectl-crdversion")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(store, "kubectl-crdversion"), filepath.Join(bin, "kubectl-crdversion")); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), filepath.Join(bin, "kubectl-crdversion"), append([]string{"completion"}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("completion %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	shim := filepath.Join(bin, "kubectl_complete-crdversion")
	contains(t, "completion --install", run("--install"), "installed "+shim, "kubectl crdversion completion --uninstall")
	info, err := os.Stat(shim)
	if err != nil || info.Mode().Perm()&0o111 == 0 {
		t.Fatalf("shim %s: %v %v", shim, err, info)
	}
	if raw, _ := os.ReadFile(shim); !strings.Contains(string(raw), "exec kubectl crdversion __complete") {
		t.Errorf("shim:\n%s", raw)
	}
	if _, err := os.Stat(filepath.Join(store, "kubectl_complete-crdversion")); err == nil {
		t.Error("the shim went into the store the link points at")
	}
	contains(t, "completion --uninstall", run("--uninstall"), "removed "+shim)
	if _, err := os.Stat(shim); !os.IsNotExist(err) {
		t.Errorf("shim still there after --uninstall: %v", err)
	}
	contains(t, "completion --uninstall again", run("--uninstall"), "nothing to remove: "+shim+" is not there")
}

// completions are the candidates of a __complete answer, without its last
// line (the directive).
func completions(out string) []string {
	var got []string
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		if line == "" || strings.HasPrefix(line, ":") || strings.HasPrefix(line, "Completion ended") {
			continue
		}
		got = append(got, strings.SplitN(line, "\t", 2)[0])
	}
	return got
}

func lineWith(out, sub string) string {
	for line := range strings.Lines(out) {
		if strings.Contains(line, sub) {
			return strings.TrimRight(line, "\n")
		}
	}
	return ""
}

// Every report prints through kubectl's printers: jsonpath, go-template,
// name, and tables in kubectl's tab writer with --no-headers.
func TestPrintersLikeKubectl(t *testing.T) {
	e := newEnv(t, demoObjects)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "cert", "-o", "jsonpath={.items[0].storedVersions}"}, `["v1alpha2","v1"]`},
		{[]string{"status", "-o", `jsonpath={range .items[*]}{.name} {.next.action}{"\n"}{end}`},
			"backups.storage.example.com ready\ncertificates.pki.example.com run\nclusterpolicies.policy.example.com none\ngadgets.example.com run\n"},
		{[]string{"status", "cert", "backups", "-o", "name"},
			"customresourcedefinition.apiextensions.k8s.io/certificates.pki.example.com\ncustomresourcedefinition.apiextensions.k8s.io/backups.storage.example.com\n"},
		{[]string{"status", "gadgets", "-o", "go-template={{range .items}}{{.storageVersion}}{{end}}"}, "v1"},
		{[]string{"status", "cert", "gadgets", "-o", "custom-columns=NAME:.name,STORAGE:.storageVersion,STORED:.storedVersions[*]"},
			"NAME                           STORAGE   STORED\ncertificates.pki.example.com   v1        v1alpha2,v1\ngadgets.example.com            v1        v1alpha1,v1\n"},
		{[]string{"verify", "backups", "v1", "-o", "jsonpath={.objects} {.roundTrips}"}, fmt.Sprintf(`%d ["v1→v1beta1→v1"]`, demoObjects/3)},
		{[]string{"status", "clusterpolicies", "--no-headers"},
			"clusterpolicies.policy.example.com   v1    yes   yes   no    yes   storage\n"},
	} {
		r := e.plugin(tc.args...)
		if r.stdout != tc.want || r.stderr != "" {
			t.Errorf("kubectl crdversion %s: exit %d\nstdout %q\nwant   %q\nstderr %q", strings.Join(tc.args, " "), r.code, r.stdout, tc.want, r.stderr)
		}
	}
	// --no-headers is for grep and awk: one version a line, its CRD named
	// on every line, every column filled.
	for _, args := range [][]string{{"status", "--no-headers"}, {"status", "-o", "wide", "--no-headers"}} {
		r := e.plugin(args...)
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		if len(lines) != 7 {
			t.Errorf("kubectl crdversion %s: %d lines, want one for each of the 7 versions:\n%s", strings.Join(args, " "), len(lines), r.stdout)
		}
		want := 7
		if len(args) > 2 {
			want = 9
		}
		for _, line := range lines {
			if f := strings.Fields(line); len(f) < want || !strings.HasSuffix(f[0], ".example.com") {
				t.Errorf("kubectl crdversion %s: line %q has %d columns or no CRD first, want %d", strings.Join(args, " "), line, len(f), want)
			}
		}
	}
}

// status sees a pending migration for this machine: a migrate here later
// counts its switch grace from that sight (kept in kubectl's cache
// directory), not from its own start.
func TestStatusRemembersAPendingMigration(t *testing.T) {
	e := newEnv(t, demoObjects)
	cache := t.TempDir()
	e.plugin("status", "--cache-dir", cache).mustCode(t, 3)
	crd := e.crd("certificates.pki.example.com")
	raw, err := os.ReadFile(filepath.Join(cache, "crdversion", "sightings", string(crd.UID)+".json"))
	if err != nil {
		t.Fatalf("no sighting kept: %v", err)
	}
	if !strings.Contains(string(raw), fmt.Sprintf(`"generation":%d,"storage":"v1"`, crd.Generation)) {
		t.Errorf("sighting %s: want generation %d at v1", raw, crd.Generation)
	}
	if _, err := os.Stat(filepath.Join(cache, "crdversion", "sightings", string(e.crd("clusterpolicies.policy.example.com").UID)+".json")); err == nil {
		t.Error("a CRD with nothing pending was kept too")
	}
}
