package e2e

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
)

const certificatesCRD = "certificates.pki.example.com"

// narrowV1 gives the certificates' v1 a schema with spec.commonName alone:
// each object stored at v1alpha2 loses the rest of its spec at v1.
const narrowV1 = `[{"op":"replace","path":"/spec/versions/1/schema/openAPIV3Schema","value":{"type":"object","properties":{"spec":{"type":"object","properties":{"commonName":{"type":"string"}}},"status":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}]`

// openV1 puts v1's schema back as the demo ships it.
const openV1 = `[{"op":"replace","path":"/spec/versions/1/schema/openAPIV3Schema","value":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}]`

// A fleet migrated canary first, through kubectl. The canary's objects
// would lose fields: it is not done, so the two clusters after it are not
// written at all, and the command exits 3 naming it. Once the canary is
// fixed, one command migrates all three, two at a time after the canary.
// A context nobody answers at is a row, not a hang.
func TestMigrateAFleetCanaryFirst(t *testing.T) {
	canary, b, c := newEnv(t, demoObjects), newEnv(t, demoObjects), newEnv(t, demoObjects)
	canary.kubectl("patch", "crd", certificatesCRD, "--type=json", "-p", narrowV1).mustCode(t, 0)
	kubeconfig := fleetKubeconfig(t, map[string]*env{"canary": canary, "b": b, "c": c})
	home := t.TempDir()
	run := func(args ...string) plugintest.Result {
		t.Helper()
		r, err := plugintest.Kubectl(t.Context(), kubeconfig, home, "", append([]string{"crdversion", "migrate", certificatesCRD, "--switch-grace=0", "-q"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	untouched := map[string]map[string]string{"b": b.crdVersions(), "c": c.crdVersions()}

	r := run("--context", "canary", "--context", "b", "--context", "c")
	if r.Code != 3 {
		t.Fatalf("exit %d, want 3 (the canary loses data)\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	for cluster, state := range map[string]string{"canary": "attention", "b": "not started", "c": "not started"} {
		if !hasRow(r.Stdout, cluster, state) {
			t.Errorf("no row %q %q:\n%s", cluster, state, r.Stdout)
		}
	}
	contains(t, "the refused canary", r.Stdout, "cluster canary:", "loses data", `the canary "canary" is not done`)
	for name, e := range map[string]*env{"b": b, "c": c} {
		if now := e.crdVersions(); !maps.Equal(now, untouched[name]) {
			t.Errorf("cluster %s was written after the canary was not done", name)
		}
	}
	if got := canary.crd(certificatesCRD).Status.StoredVersions; len(got) != 2 {
		t.Errorf("the canary's storedVersions were pruned over objects left as they are: %v", got)
	}

	// The canary fixed: one command does the fleet, one document says so.
	canary.kubectl("patch", "crd", certificatesCRD, "--type=json", "-p", openV1).mustCode(t, 0)
	r = run("--context", "canary", "--context", "b", "--context", "c", "--parallel", "2", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	var doc report.MigrateReport
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, r.Stdout)
	}
	var order []string
	for _, cl := range doc.Clusters {
		order = append(order, cl.Cluster)
		if cl.Result != "done" || cl.CRDs != 1 {
			t.Errorf("cluster %s: %s (%s), %d CRDs; want done, 1", cl.Cluster, cl.Result, cl.Why, cl.CRDs)
		}
	}
	if !slices.Equal(order, []string{"canary", "b", "c"}) || len(doc.Items) != 3 {
		t.Errorf("clusters %v and %d results, want canary, b, c in order, one result each", order, len(doc.Items))
	}
	for name, e := range map[string]*env{"canary": canary, "b": b, "c": c} {
		if got := e.crd(certificatesCRD).Status.StoredVersions; !slices.Equal(got, []string{"v1"}) {
			t.Errorf("cluster %s: storedVersions %v, want [v1]", name, got)
		}
	}

	// A cluster that does not answer ends as a row; the exit says not done.
	r = run("--context", "b", "--context", "gone")
	if r.Code != 3 || !hasRow(r.Stdout, "b", "done") || !hasRow(r.Stdout, "gone", "error") {
		t.Errorf("with an unreachable context: exit %d, want 3, b done, gone an error row\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// Named once, --context keeps its meaning: one cluster, no fleet.
	if r = run("--context", "c"); r.Code != 0 || strings.Contains(r.Stdout, "CLUSTER") {
		t.Errorf("one --context: exit %d, want 0 and no fleet table\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// hasRow tells a line of the fleet table: the cluster, then its result.
func hasRow(out, cluster, result string) bool {
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 1 && f[0] == cluster && strings.HasPrefix(strings.Join(f[1:], " "), result) {
			return true
		}
	}
	return false
}

// verify, promote and rollback take a fleet the same way: the canary alone
// first, nothing after a cluster that is not done, one document for -o
// json with each cluster's own.
func TestStepAFleetCanaryFirst(t *testing.T) {
	canary, b := newEnv(t, demoObjects), newEnv(t, demoObjects)
	canary.kubectl("patch", "crd", certificatesCRD, "--type=json", "-p", narrowV1).mustCode(t, 0)
	kubeconfig := fleetKubeconfig(t, map[string]*env{"canary": canary, "b": b})
	home := t.TempDir()
	run := func(args ...string) plugintest.Result {
		t.Helper()
		r, err := plugintest.Kubectl(t.Context(), kubeconfig, home, "", append([]string{"crdversion"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	fleet := []string{"--context", "canary", "--context", "b"}

	// The canary's objects do not round-trip v1alpha2→v1→v1alpha2: b is
	// not looked at.
	r := run(append([]string{"verify", certificatesCRD, "v1alpha2"}, fleet...)...)
	if r.Code != 3 || !hasRow(r.Stdout, "canary", "attention") || !hasRow(r.Stdout, "b", "not started") {
		t.Fatalf("verify on a fleet with a lossy canary: exit %d, want 3, canary attention, b not started\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	contains(t, "verify's own report under the canary", r.Stdout, "cluster canary:", "spec.dnsNames")
	canary.kubectl("patch", "crd", certificatesCRD, "--type=json", "-p", openV1).mustCode(t, 0)
	if r = run(append([]string{"verify", certificatesCRD, "v1alpha2"}, fleet...)...); r.Code != 0 || !hasRow(r.Stdout, "b", "done") {
		t.Fatalf("verify on the fixed fleet: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	// promote's step on each cluster, one document: each cluster's CRD.
	backupsAt := map[string]string{"canary": canary.crdVersions()["backups.storage.example.com"], "b": b.crdVersions()["backups.storage.example.com"]}
	r = run(append([]string{"promote", "backups", "v1", "-o", "json"}, fleet...)...)
	if r.Code != 0 {
		t.Fatalf("promote on a fleet: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	var doc report.FleetReport
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || doc.Kind != "FleetReport" || len(doc.Items) != 2 {
		t.Fatalf("not one FleetReport of two clusters: %v\n%s", err, r.Stdout)
	}
	for _, it := range doc.Items {
		var crd struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		if err := json.Unmarshal(it.Report, &crd); err != nil || crd.Metadata.Name != "backups.storage.example.com" || it.Result != "done" {
			t.Errorf("cluster %s: %s, report %s (%v)", it.Cluster, it.Result, it.Report, err)
		}
	}
	for name, e := range map[string]*env{"canary": canary, "b": b} {
		if e.crdVersions()["backups.storage.example.com"] == backupsAt[name] {
			t.Errorf("promote did not step backups on %s", name)
		}
	}
	// And back, on both.
	if r = run(append([]string{"rollback", "backups"}, fleet...)...); r.Code != 0 || !hasRow(r.Stdout, "canary", "done") || !hasRow(r.Stdout, "b", "done") {
		t.Errorf("rollback on a fleet: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// A version still used on the canary: blocked is refused there, and
	// the way past it names the canary's context, so that pasted as
	// printed it overrides on that cluster and no other.
	for range 2 { // bridge, deprecated
		run(append([]string{"promote", "backups", "v1"}, fleet...)...)
	}
	if r = run(append([]string{"migrate", "backups", "--switch-grace=0", "-q"}, fleet...)...); r.Code != 0 {
		t.Fatalf("migrate backups on the fleet: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	pastSecondOf(t, prunedAt(t, canary.crd(backups)))
	stale := filepath.Join(t.TempDir(), "backup.yaml")
	if err := os.WriteFile(stale, []byte("apiVersion: storage.example.com/v1beta1\nkind: Backup\nmetadata:\n  name: team-a-latest\n  namespace: team-a\nspec:\n  schedule: '0 5 * * *'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	canary.kubectl("apply", "--server-side", "--field-manager=team-a-controller", "-f", stale).mustCode(t, 0)
	r = run(append([]string{"promote", "backups", "v1", "--to", "blocked"}, fleet...)...)
	if r.Code != 3 || !hasRow(r.Stdout, "canary", "attention") || !hasRow(r.Stdout, "b", "not started") {
		t.Fatalf("blocked on a fleet whose canary has a client: exit %d, want 3\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	contains(t, "the canary's way past the gate", r.Stdout, "team-a-controller", "--to blocked --context canary --despite-clients=")
	if v := specVersion(canary.crd(backups), "v1beta1"); v == nil || !v.Served {
		t.Errorf("the refused canary stopped serving v1beta1: %+v", v)
	}

	// -f edits one file: no fleet with it.
	if r = run("promote", "-f", "crd.yaml", "--all-contexts"); r.Code != 1 || !strings.Contains(r.Stderr, "error: -f edits a file: no fleet") {
		t.Errorf("promote -f on a fleet: exit %d, want 1\n%s", r.Code, r.Stderr)
	}
}

// Which clusters a fleet takes is never guessed: a canary the kubeconfig
// does not have, no current context to take as the canary, --context
// listed beside --all-contexts, and a flag that would aim every context at
// one server or identity are each refused before any cluster is reached.
func TestAFleetIsNamedNotGuessed(t *testing.T) {
	cfg := clientcmdapi.NewConfig()
	for _, name := range []string{"a", "b"} {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "none"}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	kubeconfig := filepath.Join(t.TempDir(), "no-current.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "--all", "--all-contexts"}, "no current context to take as the canary: name it with --context"},
		{[]string{"promote", "backups", "--all-contexts", "--context", "nowhere"}, `context "nowhere" is not in the kubeconfig`},
		{[]string{"verify", "backups", "--all-contexts", "--context", "a", "--context", "b"}, "--all-contexts takes every context: give --context once at most"},
		{[]string{"rollback", "backups", "--context", "a", "--context", "b", "--token", "t"}, "--token name one cluster or identity"},
		{[]string{"status", "--all-contexts", "--server", "https://127.0.0.1:2", "--user", "a"}, "--server, --user name one cluster or identity"},
	} {
		r, err := plugintest.Kubectl(t.Context(), kubeconfig, home, "", append([]string{"crdversion"}, c.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if r.Code != 1 || r.Stdout != "" || !strings.HasPrefix(r.Stderr, "error: ") || !strings.Contains(r.Stderr, c.want) || strings.Count(r.Stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, want 1 and one error line with %q\nstdout: %s\nstderr: %s", c.args, r.Code, c.want, r.Stdout, r.Stderr)
		}
	}
}
