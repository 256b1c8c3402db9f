package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Stopping serving a version breaks every client still at it, so the step
// to blocked is refused while anyone but the plugin uses it: a field
// manager that wrote at it since the migration (managedFields), or requests
// the API server counted (the deprecated-API metric, which names no
// client). Each refusal changes nothing and names what it found; a client
// that moved to v1 is no longer named; only an override that names every
// remaining client lets the step through, and says what it overrode.
func TestBlockedWaitsForTheClients(t *testing.T) {
	e := newEnv(t, demoObjects)
	e.home = t.TempDir()
	e.plugin("promote", "backups", "v1").mustCode(t, 0) // bridge
	e.plugin("promote", "backups", "v1").mustCode(t, 0) // deprecated
	e.plugin("migrate", "backups", "--switch-grace=0", "-q").mustCode(t, 0)

	// A controller still at v1beta1 after the migration, in a later second
	// than the prune (managedFields times are whole seconds; a write in the
	// prune's own second counts too: TestBlockedCountsAWriteInThePrunesSecond).
	pastSecondOf(t, prunedAt(t, e.crd(backups)))
	at := func(version string) string {
		f := filepath.Join(t.TempDir(), "backup.yaml")
		body := "apiVersion: storage.example.com/" + version + "\nkind: Backup\nmetadata:\n  name: team-a-latest\n  namespace: team-a\nspec:\n  schedule: '0 5 * * *'\n"
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	e.kubectl("apply", "--server-side", "--field-manager=team-a-controller", "-f", at("v1beta1")).mustCode(t, 0)

	before := e.crdVersions()
	r := e.plugin("promote", "backups", "v1", "--to", "blocked").mustCode(t, 3)
	oneError(t, r, "stop serving v1beta1 of backups.storage.example.com: still in use by team-a-controller: its last write to 1 objects used v1beta1",
		"requests: the API server counted requests to v1beta1", "--despite-clients=team-a-controller,requests")
	if contains1(r.stderr, "e2e") {
		t.Errorf("the objects' writes before the migration are named as clients: %s", r.stderr)
	}
	sameCRDs(t, before, e.crdVersions())

	// The controller moves to v1: its entry is no longer at v1beta1. The
	// metric keeps its count, and names nobody.
	e.kubectl("apply", "--server-side", "--field-manager=team-a-controller", "-f", at("v1")).mustCode(t, 0)
	r = e.plugin("promote", "backups", "v1", "--to", "blocked").mustCode(t, 3)
	oneError(t, r, "still in use by requests:", "--despite-clients=requests")
	if contains1(r.stderr, "team-a-controller") {
		t.Errorf("a client that moved to v1 is still named: %s", r.stderr)
	}
	// An override of someone else lets nothing through.
	r = e.plugin("promote", "backups", "v1", "--to", "blocked", "--despite-clients=team-a-controller").mustCode(t, 3)
	oneError(t, r, "still in use by requests:")
	sameCRDs(t, before, e.crdVersions())

	// The same step on the manifest, where a cluster is named, meets the
	// same gate: the file is what that cluster gets next. The file is
	// left as it was until the override.
	file := filepath.Join(t.TempDir(), "backups.yaml")
	manifest := e.kubectl("get", "crd", backups, "-o", "yaml").mustCode(t, 0).stdout
	if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	r = e.plugin("promote", "-f", file, "backups", "v1", "--to", "blocked", "--kubeconfig", e.sb.KubeconfigPath()).mustCode(t, 3)
	oneError(t, r, "still in use by requests:", "-f "+file, "--kubeconfig "+e.sb.KubeconfigPath()+" --despite-clients=requests")
	if got, _ := os.ReadFile(file); string(got) != manifest {
		t.Error("the refused step on the file changed the file")
	}
	e.plugin("promote", "-f", file, "backups", "v1", "--to", "blocked", "--kubeconfig", e.sb.KubeconfigPath(), "--despite-clients=requests").mustCode(t, 0)
	if got, _ := os.ReadFile(file); !contains1(string(got), "served: false") {
		t.Errorf("the step with the override did not edit the file:\n%s", got)
	}
	sameCRDs(t, before, e.crdVersions())

	r = e.plugin("promote", "backups", "v1", "--to", "blocked", "--despite-clients=requests").mustCode(t, 0)
	contains(t, "the override said", r.stderr, "warning: stopped serving despite requests: the API server counted requests to v1beta1")
	if v := specVersion(e.crd(backups), "v1beta1"); v == nil || v.Served {
		t.Fatalf("v1beta1 after blocked: %+v", v)
	}
}

// prunedAt is when the plugin last wrote status.storedVersions.
func prunedAt(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) time.Time {
	t.Helper()
	for _, mf := range crd.ManagedFields {
		if mf.Manager == "kubectl-crdversion" && mf.Subresource == "status" && mf.Time != nil {
			return mf.Time.Time
		}
	}
	t.Fatal("no prune by the plugin in managedFields")
	return time.Time{}
}

// pastSecondOf returns once the clock is in a later second than ts: a
// managedFields time written from then on is after it.
func pastSecondOf(t *testing.T, ts time.Time) {
	t.Helper()
	next := ts.Truncate(time.Second).Add(time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for !time.Now().After(next) {
		if time.Now().After(deadline) {
			t.Fatalf("the clock stays before %s", next)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
