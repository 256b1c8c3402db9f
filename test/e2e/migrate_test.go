package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

func TestMigrateThroughKubectl(t *testing.T) {
	e := newEnv(t, demoObjects)
	certs := demoObjects / 2
	stored := func() map[string]int {
		c, err := e.sb.StoredAPIVersions(t.Context(), "pki.example.com", "certificates")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := stored(); c["pki.example.com/v1alpha2"] != certs {
		t.Fatalf("setup: %v", c)
	}

	// A server dry run checks every write and writes nothing, and counts
	// what the run will do: right after the switch, every object is to be
	// re-stored, none already there.
	dry := e.plugin("migrate", "cert", "--dry-run=server", "-q").mustCode(t, 0)
	contains(t, "migrate --dry-run=server", dry.stdout, fmt.Sprintf("%d to re-store (accepted by a server dry run), 0 already there", certs), "not pruned")
	if c := stored(); c["pki.example.com/v1alpha2"] != certs {
		t.Fatalf("a server dry run wrote: %v", c)
	}

	failures := filepath.Join(t.TempDir(), "failures.jsonl")
	// The demo switched certificates' storage a moment ago: the prune
	// waits out a (short) switch grace and re-stores once more.
	r := e.plugin("migrate", "--all", "--failures-file", failures, "-o", "json", "--switch-grace=3s").mustCode(t, 0)
	// Waiting what is left of it, or none where the pass outlasted it.
	contains(t, "migrate --all right after a switch", r.stderr, "may land at the old version for up to 3s after it: ", ", then re-storing once more before pruning")
	var doc report.MigrateReport
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r.stdout)
	}
	// --all: the two CRDs with storedVersions beyond storage.
	names, settled := []string{}, false
	for _, it := range doc.Items {
		names = append(names, it.CRD)
		if it.CRD == "certificates.pki.example.com" && (it.Rewritten != int64(certs) || it.Unchanged != 0) {
			t.Errorf("the run re-stored %d and found %d already there; the dry run said %d to re-store", it.Rewritten, it.Unchanged, certs)
		}
		if !it.Pruned || it.Failed != 0 || it.StoredVersionsAfter[0] != it.Storage || len(it.StoredVersionsAfter) != 1 {
			t.Errorf("%s: %+v", it.CRD, it)
		}
		// The pass's own time, which its objects/s is over, leaves out
		// the grace waited out and the second pass after it.
		settled = settled || it.Settle != nil
		if s := it.Settle; s != nil && (it.Took <= 0 || it.Took+s.Took >= it.Duration) {
			t.Errorf("%s: the pass took %s and the second %s of a migration of %s", it.CRD, it.Took, s.Took, it.Duration)
		}
	}
	if !settled {
		t.Errorf("no CRD re-stored once more after the grace: %s", r.stdout)
	}
	if strings.Join(names, ",") != "certificates.pki.example.com,gadgets.example.com" {
		t.Errorf("--all migrated %v", names)
	}
	if c := stored(); len(c) != 1 || c["pki.example.com/v1"] != certs {
		t.Fatalf("etcd after migrate: %v", c)
	}
	if f, err := os.Open(failures); err != nil {
		t.Fatal(err)
	} else if sc := bufio.NewScanner(f); sc.Scan() {
		t.Errorf("failures file has %q", sc.Text())
	}
	// The problems status flagged are gone: exit 0, nothing pending.
	st := e.plugin("status").mustCode(t, 0)
	if strings.Contains(st.stdout, "migration pending") || strings.Contains(st.stdout, "missing") {
		t.Errorf("status after migrate:\n%s", st.stdout)
	}
	oneError(t, e.plugin("migrate").mustCode(t, 1), "name the CRDs to migrate, or pass --all")
}

func TestPruneNeedsProof(t *testing.T) {
	e := newEnv(t, demoObjects)
	// gadgets.example.com's storedVersions names v1alpha1, gone from spec.
	// prune proves every object is at v1 by its own pass, then prunes.
	r := e.plugin("prune", "gadgets", "-q", "--switch-grace=0").mustCode(t, 0)
	contains(t, "prune", r.stdout, "gadgets.example.com: 5 objects at v1: 0 re-stored, 5 already there", "storedVersions: v1alpha1,v1 → v1 (pruned)")
	if sv := e.crd("gadgets.example.com").Status.StoredVersions; strings.Join(sv, ",") != "v1" {
		t.Fatalf("storedVersions = %v", sv)
	}

	// On your word: a loud warning, the same checks, and a server dry run
	// persists nothing.
	before := e.crdVersions()
	word := e.plugin("prune", "cert", "--i-have-migrated", "--dry-run=server").mustCode(t, 0)
	contains(t, "prune --i-have-migrated", word.stderr, "warning: pruning certificates.pki.example.com on your word, without proof")
	contains(t, "prune --i-have-migrated", word.stdout, "v1alpha2,v1 → v1 accepted by a server dry run, not persisted")
	sameCRDs(t, before, e.crdVersions())
}

// A cluster-scoped CRD through the whole path to a pruned storedVersions:
// introduced from a file, bridged, deprecated, migrated.
func TestMigrateClusterScoped(t *testing.T) {
	e := newEnv(t, demoObjects)
	policies := demoObjects - demoObjects/2 - demoObjects/3
	e.plugin("promote", "clusterpolicies", "v2", "--from-file", "../../hack/demo/clusterpolicies-v2.yaml").mustCode(t, 0)
	e.plugin("promote", "clusterpolicies", "v2").mustCode(t, 0) // bridge
	e.plugin("promote", "clusterpolicies", "v2").mustCode(t, 0) // deprecated: v2 is storage
	// No write is in flight across the switch here: no grace to wait out.
	r := e.plugin("migrate", "clusterpolicies", "-q", "--switch-grace=0").mustCode(t, 0)
	contains(t, "migrate cluster-scoped", r.stdout, fmt.Sprintf("clusterpolicies.policy.example.com: %d objects at v2: %d re-stored", policies, policies), "storedVersions: v1,v2 → v2 (pruned)",
		"v1→v2→v1 proven by the schemas")
	c, err := e.sb.StoredAPIVersions(t.Context(), "policy.example.com", "clusterpolicies")
	if err != nil || len(c) != 1 || c["policy.example.com/v2"] != policies {
		t.Fatalf("etcd after migrate: %v %v", c, err)
	}
}

// A cluster that does not serve storagemigration.k8s.io (this CRD-only
// API server, or Kubernetes before 1.37 without the feature) cannot
// migrate by itself: --via=cluster says so in one line and writes nothing.
func TestMigrateViaClusterNotServed(t *testing.T) {
	e := newEnv(t, 20)
	before := e.crdVersions()
	r := e.plugin("migrate", "backups.storage.example.com", "--via=cluster").mustCode(t, 1)
	contains(t, "migrate --via=cluster", r.stderr, "error: ", "does not serve storagemigration.k8s.io/v1", "(migrate without --via=cluster)")
	if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 {
		t.Errorf("want one line on stderr, got:\n%s", r.stderr)
	}
	sameCRDs(t, before, e.crdVersions())
}

// One CRD of --all refused (the cluster's own migrator reports itself at
// work on it): the others are migrated all the same, every CRD is in the
// report, and the command ends with the worst, the error, named once.
func TestMigrateAllGoesOnAfterACRDFails(t *testing.T) {
	e := newEnv(t, 10)
	crds := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	crd, err := crds.Get(t.Context(), "certificates.pki.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crd.Status.Conditions = append(crd.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.StorageMigrating, Status: apiextensionsv1.ConditionTrue, Reason: "Migrating", LastTransitionTime: metav1.Now()})
	if _, err := crds.UpdateStatus(t.Context(), crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := e.plugin("migrate", "--all", "--switch-grace=0", "-q", "-o", "json").mustCode(t, 1)
	var doc report.MigrateReport
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r.stdout)
	}
	if len(doc.Items) != 2 || doc.Items[0].CRD != "certificates.pki.example.com" || doc.Items[0].StopReason != results.StopError ||
		doc.Items[1].CRD != "gadgets.example.com" || !doc.Items[1].Pruned {
		t.Fatalf("report %+v: want certificates stopped by its error and gadgets migrated after it", doc.Items)
	}
	oneError(t, result{stderr: r.stderr, code: r.code}, "certificates.pki.example.com", "StorageMigrating=True", "--force")
}

// On a machine that never saw the switch (every CI runner, every Job), the
// prune waits out the switch grace: it says why, how to skip it, and shows
// the time left while it waits.
func TestSwitchGraceSaysWhyAndCountsDown(t *testing.T) {
	e := newEnv(t, demoObjects)
	r := e.plugin("migrate", "cert", "--switch-grace=12s").mustCode(t, 0)
	contains(t, "migrate inside the grace", r.stderr,
		"may land at the old version for up to 12s after it: waiting ",
		"(the switch is dated by when this machine first saw it, ",
		"--switch-grace=0 skips this wait",
		"certificates.pki.example.com: switch grace: ", "s left\n")
	contains(t, "migrate inside the grace", r.stdout, "after the switch grace, once more: ")
}
