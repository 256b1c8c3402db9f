package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
)

const backups = "backups.storage.example.com"

// The whole forward path of a pair and back, on a CRD the demo installs with
// v1beta1 as storage and v1 introduced, checking the CRD after each step.
func TestPromoteAndRollbackWalk(t *testing.T) {
	e := newEnv(t, demoObjects)
	objects := demoObjects / 3

	r := e.plugin("promote", "backups", "v1").mustCode(t, 0)
	contains(t, "promote to bridge", r.stdout, "backups.storage.example.com: v1 introduced → bridge (applied)", "v1        annotation   ", "objects round-trip v1→v1beta1→v1 without loss")
	rec, ok := stages.VerificationFor(e.crd(backups), "v1")
	if !ok || rec.From != "v1beta1" || rec.Objects != int64(objects) {
		t.Fatalf("bridge record = %+v (present %v), want from v1beta1 with %d objects", rec, ok, objects)
	}
	if f := strings.Fields(lineWith(e.plugin("status", "backups").stdout, " v1 ")); len(f) == 0 || f[len(f)-1] != "bridge" {
		t.Errorf("status after bridge: v1 row %q, want stage bridge", f)
	}

	r = e.plugin("promote", "backups", "v1").mustCode(t, 0)
	contains(t, "promote to deprecated", r.stdout, "v1 bridge → deprecated", "kubectl crdversion migrate backups.storage.example.com",
		"v1beta1→v1→v1beta1 proven by the schemas")
	crd := e.crd(backups)
	if old := specVersion(crd, "v1beta1"); stages.StorageVersion(crd) != "v1" || !old.Deprecated || old.DeprecationWarning == nil {
		t.Fatalf("after deprecated: storage %s, versions %+v", stages.StorageVersion(crd), crd.Spec.Versions)
	}
	// Clients of the old version now get the warning, through real kubectl.
	get := e.kubectl("get", "backups.v1beta1.storage.example.com", "-n", "team-a", "-o", "name").mustCode(t, 0)
	contains(t, "kubectl get of the deprecated version", get.stderr, "Warning: storage.example.com/v1beta1 Backup is deprecated; use storage.example.com/v1 Backup")

	// v1beta1 is still in storedVersions: stopping serving it is refused (its
	// objects are checked while it can still be read), nothing changes.
	before := e.crdVersions()
	r = e.plugin("promote", "backups", "v1").mustCode(t, 1)
	oneError(t, r, "v1beta1 is still in status.storedVersions", "run: kubectl crdversion migrate backups.storage.example.com")
	sameCRDs(t, before, e.crdVersions())

	// Once migrate has re-stored every object at v1 and pruned
	// storedVersions, blocked and removal go through, and removal cannot be
	// rolled back. The kubectl get above was a client's request to v1beta1,
	// which the API server counts: blocked is refused, changing nothing,
	// until the user says to go on despite it. The objects' writes at
	// v1beta1 came before the migration: history, not a client.
	e.plugin("migrate", "backups", "--switch-grace=0", "-q").mustCode(t, 0)
	before = e.crdVersions()
	r = e.plugin("promote", "backups", "v1").mustCode(t, 3)
	oneError(t, r, "still in use by requests: the API server counted requests to v1beta1", "--despite-clients=requests")
	sameCRDs(t, before, e.crdVersions())
	r = e.plugin("promote", "backups", "v1", "--despite-clients=requests").mustCode(t, 0)
	contains(t, "the override", r.stderr, "warning: stopped serving despite requests")
	if v := specVersion(e.crd(backups), "v1beta1"); v == nil || v.Served {
		t.Fatalf("after blocked v1beta1 = %+v", v)
	}
	// promote returns once the API server stops serving v1beta1.
	v1beta1 := schema.GroupVersionResource{Group: "storage.example.com", Version: "v1beta1", Resource: "backups"}
	if _, err := e.clients.Dynamic.Resource(v1beta1).List(t.Context(), metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a list at v1beta1 right after blocked: %v, want NotFound", err)
	}
	// A server dry run of the step back is accepted and leaves the CRD as is.
	blocked := e.crdVersions()
	e.plugin("rollback", "backups", "--dry-run=server").mustCode(t, 0)
	sameCRDs(t, blocked, e.crdVersions())
	r = e.plugin("promote", "backups", "v1").mustCode(t, 0)
	contains(t, "promote to removed", r.stdout, "v1 blocked → removed", "--clean-managed-fields")
	if f := strings.Fields(lineWith(r.stdout, "v1beta1   version")); strings.Join(f, " ") != "v1beta1 version present" {
		t.Errorf("removed plan row %q, want v1beta1 version present", f)
	}
	if crd := e.crd(backups); len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1" {
		t.Fatalf("after removed: %+v", crd.Spec.Versions)
	}
	// Every object was written through v1beta1, so every one had managedFields
	// naming it; they are cleaned and server-side apply works.
	contains(t, "cleanup after removed", r.stdout, fmt.Sprintf("managedFields: %d objects cleaned of entries at unserved versions, 0 had none, 0 still have them", objects))
	obj := filepath.Join(t.TempDir(), "backup.yaml")
	if err := os.WriteFile(obj, []byte("apiVersion: storage.example.com/v1\nkind: Backup\nmetadata:\n  name: nightly-0000\n  namespace: team-a\nspec:\n  schedule: '0 4 * * *'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.kubectl("apply", "--server-side", "--force-conflicts", "-f", obj).mustCode(t, 0)
	oneError(t, e.plugin("rollback", "backups").mustCode(t, 1), "a removed version cannot be brought back by the plugin")
}

// The walk back, one step at a time, each step taking back what its step
// forward recorded. Before migrate, the step back from deprecated switches
// storage back to v1beta1, checked on every object (v1 adds nothing v1beta1
// cannot hold: the schemas prove it); after migrate has pruned v1beta1 from
// storedVersions it does the same, for the step forward switched storage;
// without the record (a step taken by hand), it only undoes the deprecation.
func TestRollbackWalk(t *testing.T) {
	e := newEnv(t, demoObjects)
	e.home = t.TempDir() // one machine: the plugin's records carry over
	for range 2 {
		e.plugin("promote", "backups", "v1").mustCode(t, 0) // bridge, deprecated
	}
	r := e.plugin("rollback", "backups").mustCode(t, 0)
	contains(t, "rollback to bridge", r.stdout, "v1 deprecated → bridge", "re-store them at v1beta1", "v1→v1beta1→v1")
	crd := e.crd(backups)
	if stages.StorageVersion(crd) != "v1beta1" || specVersion(crd, "v1beta1").Deprecated || specVersion(crd, "v1beta1").DeprecationWarning != nil {
		t.Fatalf("rollback to bridge: %+v", crd.Spec.Versions)
	}
	contains(t, "status after rollback", e.plugin("status", "backups").stdout, "bridge")

	e.plugin("promote", "backups", "v1").mustCode(t, 0) // deprecated again
	e.plugin("migrate", "backups", "--switch-grace=0", "-q").mustCode(t, 0)
	// The walk's checks read v1beta1 both deprecated and not: whether the
	// plugin's records account for every request the API server counted
	// depends on when its metrics were read, so blocked takes the user's
	// word (TestBlockedWaitsForTheClients is the gate's own test).
	e.plugin("promote", "backups", "v1", "--despite-clients=requests").mustCode(t, 0) // blocked
	e.plugin("rollback", "backups").mustCode(t, 0)
	if v := specVersion(e.crd(backups), "v1beta1"); !v.Served || !v.Deprecated {
		t.Fatalf("rollback to deprecated: v1beta1 = %+v", v)
	}
	r = e.plugin("rollback", "backups", "--dry-run=client").mustCode(t, 0)
	contains(t, "rollback of the switch after migrate", r.stdout, "v1 deprecated → bridge", "v1beta1   storage")

	// The same CRD as a step by hand leaves it: no record.
	crd = e.crd(backups)
	delete(crd.Annotations, stages.StepsAnnotation)
	if _, err := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Update(t.Context(), crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r = e.plugin("rollback", "backups").mustCode(t, 0)
	contains(t, "rollback of the deprecation", r.stdout, "v1 deprecated → served", "v1 stays the storage version")
	crd = e.crd(backups)
	if stages.StorageVersion(crd) != "v1" || specVersion(crd, "v1beta1").Deprecated {
		t.Fatalf("rollback to served: %+v", crd.Spec.Versions)
	}
	oneError(t, e.plugin("rollback", "backups").mustCode(t, 1), "nothing to roll back")
}

func TestPromoteIntroduceFromFile(t *testing.T) {
	e := newEnv(t, demoObjects)
	file := writeCRD(t, withV2(e.crd("clusterpolicies.policy.example.com")))

	before := e.crdVersions()
	oneError(t, e.plugin("promote", "clusterpolicies", "v2").mustCode(t, 1), "clusterpolicies.policy.example.com has no version v2; it has v1; to introduce v2: kubectl crdversion promote clusterpolicies.policy.example.com v2 --from-file CRD_MANIFEST")
	oneError(t, e.plugin("promote", "clusterpolicies", "v2", "--to", "deprecated", "--from-file", file).mustCode(t, 1),
		"v2 is absent; the next stage is introduced, not deprecated", "run: kubectl crdversion promote clusterpolicies.policy.example.com v2 --from-file CRD_MANIFEST")
	oneError(t, e.plugin("promote", "clusterpolicies", "v2", "--to", "gone").mustCode(t, 1), `unknown stage "gone"`)
	oneError(t, e.plugin("promote", "clusterpolicies", "v2", "--dry-run=maybe").mustCode(t, 1), "invalid dry-run value (maybe)")
	sameCRDs(t, before, e.crdVersions())

	r := e.plugin("promote", "clusterpolicies", "v2", "--from-file", file, "-o", "json").mustCode(t, 0)
	var out map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out["kind"] != "CustomResourceDefinition" {
		t.Fatalf("-o json: %v\n%s", err, r.stdout)
	}
	v2 := specVersion(e.crd("clusterpolicies.policy.example.com"), "v2")
	if v2 == nil || !v2.Served || v2.Storage {
		t.Fatalf("introduced v2 = %+v", v2)
	}
}

func TestPromoteDryRunChangesNothing(t *testing.T) {
	e := newEnv(t, demoObjects)
	// Blocked needs v1alpha2 gone from storedVersions.
	e.plugin("migrate", "cert", "--switch-grace=0", "-q").mustCode(t, 0)
	before := e.crdVersions()
	// The deprecated-API metric is shared by this binary's API servers:
	// other tests' reads of v1alpha2 are not this test's subject.
	r := e.plugin("promote", "cert", "v1", "--dry-run=server", "--despite-clients=requests").mustCode(t, 0)
	contains(t, "server dry run", r.stdout, "v1 deprecated → blocked (server dry run: validated, not persisted)", "v1alpha2   served   true     false")
	r = e.plugin("promote", "cert", "v1", "--dry-run=client", "-o", "yaml").mustCode(t, 0)
	contains(t, "client dry run", r.stdout, "kind: CustomResourceDefinition", "served: false")
	contains(t, "client dry run plan on stderr", r.stderr, "dry run: nothing sent")
	sameCRDs(t, before, e.crdVersions())

	// The API server validates what a server dry run would write, and what it
	// rejects is reported: here a warning longer than it accepts.
	e.plugin("promote", "backups", "v1").mustCode(t, 0) // to bridge
	before = e.crdVersions()
	r = e.plugin("promote", "backups", "v1", "--dry-run=server", "--deprecation-warning", strings.Repeat("x", 300)).mustCode(t, 1)
	oneError(t, r, "deprecationWarning")
	sameCRDs(t, before, e.crdVersions())
}

func TestPromoteWarnsWhenGitOpsOwnsVersions(t *testing.T) {
	e := newEnv(t, demoObjects)
	// Argo CD applies CRDs server-side under its own field manager.
	crd := e.crd(backups)
	manifest := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": backups},
		"spec":     crd.Spec,
	}
	raw, _ := json.Marshal(manifest)
	file := filepath.Join(t.TempDir(), "crd.json")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	e.kubectl("apply", "--server-side", "--field-manager=argocd-controller", "-f", file).mustCode(t, 0)

	r := e.plugin("rollback", "backups", "--dry-run=server").mustCode(t, 0)
	contains(t, "gitops warning", r.stderr, "warning: spec.versions is managed by argocd-controller (Argo CD): its next apply of its manifest puts back what the manifest says, reverting this change")
}

// withV2 is the CRD with a v2 beside its first version: served, not
// storage, the same schema.
func withV2(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	out := crd.DeepCopy()
	v2 := out.Spec.Versions[0]
	v2.Name, v2.Storage = "v2", false
	out.Spec.Versions = append(out.Spec.Versions, v2)
	return out
}

// writeCRD writes the CRD as a manifest file, without what the server set.
func writeCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) string {
	t.Helper()
	m := crd.DeepCopy()
	m.ManagedFields, m.ResourceVersion, m.UID = nil, "", ""
	m.APIVersion, m.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	raw, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func oneError(t *testing.T, r result, wants ...string) {
	t.Helper()
	if r.stdout != "" {
		t.Errorf("stdout = %q, want nothing", r.stdout)
	}
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") {
		t.Errorf("stderr = %q, want one error line", r.stderr)
	}
	contains(t, "error", r.stderr, wants...)
}

// --from-file brings the new version's schema and nothing else: the live
// CRD converts through a webhook trusted by a caBundle (as cert-manager's
// cainjector keeps it) that the chart's manifest lacks. Introducing v3
// keeps the live caBundle, says the manifest's conversion differs, and the
// API server can still call the converter: an object created at v3 reads
// at v1.
func TestPromoteFromFileKeepsTheLiveConversion(t *testing.T) {
	e := newEnv(t, 0)
	installEndpoints(t, e, 2)
	live := e.crd(endpoints)
	m := live.DeepCopy()
	v3 := m.Spec.Versions[1]
	v3.Name, v3.Storage = "v3", false
	m.Spec.Versions = append(m.Spec.Versions, v3)
	m.Spec.Conversion.Webhook.ClientConfig.CABundle = nil
	file := writeCRD(t, m)

	r := e.plugin("promote", "endpoints", "v3", "--from-file", file).mustCode(t, 0)
	contains(t, "the plan", r.stdout, "v3        version   ", "the manifest's conversion (", "differs from the live one", "--conversion-from-file")
	after := e.crd(endpoints)
	if string(after.Spec.Conversion.Webhook.ClientConfig.CABundle) != string(live.Spec.Conversion.Webhook.ClientConfig.CABundle) || specVersion(after, "v3") == nil {
		t.Fatalf("after introducing v3: conversion %+v", after.Spec.Conversion)
	}
	created := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "net.example.com/v3", "kind": "Endpoint",
		"metadata": map[string]any{"name": "at-v3", "namespace": "default"}, "spec": map[string]any{"hostPort": "h:1"}}}
	v3gvr := schema.GroupVersionResource{Group: "net.example.com", Version: "v3", Resource: "endpoints"}
	// promote returns once the API server serves v3: a create at once works.
	if _, err := e.clients.Dynamic.Resource(v3gvr).Namespace("default").Create(t.Context(), created, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a create at v3 right after introducing it: %v", err)
	}
	oneError(t, e.plugin("promote", "endpoints", "v3", "--conversion-from-file").mustCode(t, 1), "--conversion-from-file needs --from-file")
}
