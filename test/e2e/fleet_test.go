package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
)

// fleetKubeconfig writes one kubeconfig whose contexts are the envs' API
// servers, by name, and "gone", a server no one answers at.
func fleetKubeconfig(t *testing.T, envs map[string]*env) string {
	t.Helper()
	merged := clientcmdapi.NewConfig()
	for name, e := range envs {
		cfg, err := clientcmd.LoadFromFile(e.sb.KubeconfigPath())
		if err != nil {
			t.Fatal(err)
		}
		cur := cfg.Contexts[cfg.CurrentContext]
		merged.Clusters[name] = cfg.Clusters[cur.Cluster]
		merged.AuthInfos[name] = cfg.AuthInfos[cur.AuthInfo]
		merged.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	merged.Clusters["gone"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1", InsecureSkipTLSVerify: true}
	merged.AuthInfos["gone"] = &clientcmdapi.AuthInfo{Token: "none"}
	merged.Contexts["gone"] = &clientcmdapi.Context{Cluster: "gone", AuthInfo: "gone"}
	merged.CurrentContext = "gone"
	path := filepath.Join(t.TempDir(), "fleet.kubeconfig")
	if err := clientcmd.WriteToFile(*merged, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// One command checks an upgrade against a fleet: one cluster still stores
// objects at the version the upgrade drops, one was migrated, one cannot be
// reached. One report, a row per cluster's findings, the unreachable one a
// row of its own, exit 3.
func TestCheckAFleet(t *testing.T) {
	a, b := newEnv(t, demoObjects), newEnv(t, demoObjects)
	b.plugin("migrate", "certificates", "-q", "--switch-grace=0").mustCode(t, 0)
	next := certificatesWithout(t, a, "v1alpha2")
	kubeconfig := fleetKubeconfig(t, map[string]*env{"a": a, "b": b})

	run := func(args ...string) plugintest.Result {
		r, err := plugintest.Kubectl(t.Context(), kubeconfig, t.TempDir(), next, append([]string{"crdversion", "check", "-f", "-", "--no-objects"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, args := range [][]string{{"--context", "a", "--context", "b", "--context", "gone"}, {"--all-contexts"}} {
		r := run(args...)
		if r.Code != 3 {
			t.Fatalf("check %v: exit %d, want 3\n%s%s", args, r.Code, r.Stdout, r.Stderr)
		}
		row := func(cluster, rule string) bool {
			for line := range strings.Lines(r.Stdout) {
				if strings.HasPrefix(line, cluster+" ") && strings.Contains(line, " "+rule+" ") {
					return true
				}
			}
			return false
		}
		if !row("a", "storedVersionRemoved") || !row("gone", "clusterUnchecked") || row("b", "storedVersionRemoved") {
			t.Errorf("check %v: want a refused, b not, gone unchecked:\n%s", args, r.Stdout)
		}
		contains(t, "a fleet", r.Stdout, "CLUSTER", "against the 3 clusters", "--context a")
	}
}

// The fleet view of status: every cluster's CRDs with a CLUSTER column,
// the pending migration on the one that still has it, the unreachable
// cluster a row with its error.
func TestStatusOfAFleet(t *testing.T) {
	a, b := newEnv(t, demoObjects), newEnv(t, demoObjects)
	b.plugin("migrate", "certificates", "-q", "--switch-grace=0").mustCode(t, 0)
	kubeconfig := fleetKubeconfig(t, map[string]*env{"a": a, "b": b})
	for _, args := range [][]string{{"--context", "a", "--context", "b", "--context", "gone"}, {"--all-contexts"}} {
		r, err := plugintest.Kubectl(t.Context(), kubeconfig, t.TempDir(), "", append([]string{"crdversion", "status", "certificates.pki.example.com"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if r.Code != 3 {
			t.Fatalf("status %v: exit %d, want 3\n%s%s", args, r.Code, r.Stdout, r.Stderr)
		}
		row := func(cluster, text string) bool {
			for line := range strings.Lines(r.Stdout) {
				if strings.HasPrefix(line, cluster+" ") && strings.Contains(line, text) {
					return true
				}
			}
			return false
		}
		if !row("a", "run: kubectl crdversion migrate certificates.pki.example.com --context a (") || row("b", "run: kubectl crdversion migrate") ||
			!row("gone", "status could not be read from this cluster") || !row("CLUSTER", "NEXT") {
			t.Errorf("status %v:\n%s", args, r.Stdout)
		}
	}
	// The next step, pasted as printed (the current context is "gone"),
	// runs against the cluster it is for.
	r, err := plugintest.Kubectl(t.Context(), kubeconfig, t.TempDir(), "", "crdversion", "status", "certificates.pki.example.com", "--all-contexts", "-o", "jsonpath={.items[?(@.cluster==\"a\")].next.command}")
	if err != nil {
		t.Fatal(err)
	}
	pasted := strings.Fields(r.Stdout)
	if len(pasted) < 2 || pasted[0] != "kubectl" {
		t.Fatalf("next.command of a: %q", r.Stdout)
	}
	if r, err = plugintest.Kubectl(t.Context(), kubeconfig, t.TempDir(), "", append(pasted[1:], "-q", "--switch-grace=0")...); err != nil || r.Code != 0 {
		t.Fatalf("%s: %v %d\n%s%s", r.Stdout, err, r.Code, r.Stdout, r.Stderr)
	}
	if crd := a.crd("certificates.pki.example.com"); len(crd.Status.StoredVersions) != 1 {
		t.Errorf("the pasted step did not migrate a: storedVersions %v", crd.Status.StoredVersions)
	}
}
