package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
)

// certificatesWithout is the demo's certificates CRD as a manifest, without
// version v: what a chart's next release ships.
func certificatesWithout(t *testing.T, e *env, v string) string {
	t.Helper()
	live := e.crd("certificates.pki.example.com")
	crd := apiextensionsv1.CustomResourceDefinition{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: live.Name}, Spec: live.Spec}
	crd.Spec.Versions = nil
	for _, ver := range live.Spec.Versions {
		if ver.Name != v {
			crd.Spec.Versions = append(crd.Spec.Versions, ver)
		}
	}
	raw, err := yaml.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// The most common upgrade failure, caught before the upgrade: the chart's
// next release drops v1alpha2, which status.storedVersions still names.
// check says so in the API server's words, with the fix; once migrate has
// pruned storedVersions, check no longer finds it and the apply succeeds.
func TestCheckCatchesTheStoredVersionsTrap(t *testing.T) {
	e := newEnv(t, demoObjects)
	next := certificatesWithout(t, e, "v1alpha2")
	// A rendered chart: the CRD beside a Deployment, from stdin.
	chart := "# Source: chart/templates/deploy.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n---\n" + next

	before := e.crdVersions()
	r := e.kubectlIn(chart, "crdversion", "check", "-f", "-").mustCode(t, 3)
	contains(t, "check before migrate", r.stdout, "storedVersionRemoved",
		`status.storedVersions[0]: Invalid value: "v1alpha2": missing from spec.versions`,
		"1. re-store every object at v1 and prune v1alpha2 from storedVersions: the API server refuses the release while storedVersions names a version it removes: kubectl crdversion migrate certificates.pki.example.com",
		// The demo wrote every certificate at v1alpha2: its client is named.
		"clientsOnVersion", "field managers whose last write used v1alpha2, which this upgrade stops serving:", fmt.Sprintf("(%d objects)", demoObjects/2))
	if strings.Count(r.stdout, "missing from spec.versions") != 1 {
		t.Errorf("the rejection is reported more than once (rule and server dry run):\n%s", r.stdout)
	}
	sameCRDs(t, before, e.crdVersions()) // the server dry run persisted nothing

	e.plugin("migrate", "certificates", "-q", "--switch-grace=0").mustCode(t, 0)
	r = e.kubectlIn(chart, "crdversion", "check", "-f", "-", "-o", "json")
	var doc report.CheckReport
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r.stdout)
	}
	for _, f := range doc.Findings {
		if f.Kind == "rejected" {
			t.Errorf("after migrate: %+v", f)
		}
	}
	file := filepath.Join(t.TempDir(), "next.yaml")
	if err := os.WriteFile(file, []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
	e.kubectl("apply", "--server-side", "--force-conflicts", "-f", file).mustCode(t, 0)
}

// In CI, without a cluster: a pull request's manifests against the base
// branch's, as release notes. The pair skips steps and tightens v1.
func TestCheckFilesAsReleaseNotes(t *testing.T) {
	// Release notes are a CRD author's: --policy keeps the release rules errors.
	r := offline(t, "check", "-f", "testdata/check/new.yaml", "--against-file", "testdata/check/old.yaml", "-o", "markdown", "--policy").mustCode(t, 3)
	golden := "testdata/check/release-notes.md"
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if r.stdout != string(want) {
		t.Errorf("-o markdown differs from %s (UPDATE_GOLDEN=1 rewrites it):\n%s", golden, r.stdout)
	}

	// Without --policy the same pair breaks release rules a user of the
	// CRD cannot act on: warnings, exit 0; 3 with --strict.
	r = offline(t, "check", "-f", "testdata/check/new.yaml", "--against-file", "testdata/check/old.yaml").mustCode(t, 0)
	contains(t, "the same pair without --policy", r.stdout, "0 errors, 7 warnings")

	// Unchanged manifests: nothing to report, exit 0.
	offline(t, "check", "-f", "testdata/check/old.yaml", "--against-file", "testdata/check/old.yaml").mustCode(t, 0)

	// Deprecating v1beta1 alone is a warning for the release notes: exit 0,
	// and 3 with --strict.
	old, err := os.ReadFile("testdata/check/old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	deprecated := filepath.Join(t.TempDir(), "deprecated.yaml")
	if err := os.WriteFile(deprecated, []byte(strings.Replace(string(old), "    served: true\n    storage: true", "    served: true\n    deprecated: true\n    storage: true", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	r = offline(t, "check", "-f", deprecated, "--against-file", "testdata/check/old.yaml").mustCode(t, 0)
	contains(t, "a deprecation", r.stdout, "versionDeprecated", "example.com/v1beta1 Gizmo is deprecated; use example.com/v1", "0 errors, 1 warning")
	offline(t, "check", "-f", deprecated, "--against-file", "testdata/check/old.yaml", "--strict").mustCode(t, 3)
}

// -f reads the way kubectl's does: a directory (-R for below it), with a
// chart's unrendered template beside the CRDs a warning, not the end.
func TestCheckReadsDirectoriesAndRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, err := os.ReadFile("testdata/check/old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write("crds/gizmos.yaml", string(old))
	write("templates/deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n  labels:\n    {{- include \"chart.labels\" . | nindent 4 }}\n")
	write("values.yaml", "labels:\n  app: web\n")

	r := offline(t, "check", "-R", "-f", dir, "--against-file", "testdata/check/old.yaml").mustCode(t, 0)
	contains(t, "check -R on a chart", r.stderr, "warning: "+filepath.Join(dir, "templates/deployment.yaml")+": yaml: line")
	contains(t, "check -R on a chart", r.stdout, "1 CRD checked against the files: nothing found")
	// Without -R only the directory's own files are read: here none is a CRD.
	oneError(t, offline(t, "check", "-f", dir, "--against-file", "testdata/check/old.yaml").mustCode(t, 1), "no CustomResourceDefinition in the manifests given with -f")

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("kind: CustomResourceDefinition\nspec: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	oneError(t, offline(t, "check", "-f", bad, "--against-file", "testdata/check/old.yaml").mustCode(t, 1), bad+": yaml: line")
	oneError(t, offline(t, "check").mustCode(t, 1), "-f is required")
}

// A manifest that does not decode is an error naming where, never a CRD
// fewer: a duplicate key (Helm output often has them) or a misspelt field
// once turned "2 errors" into "nothing found", exit 0. A List, as kubectl
// get -o yaml writes, is unwrapped.
func TestManifestReadersAreStrict(t *testing.T) {
	dir := t.TempDir()
	old, err := os.ReadFile("testdata/check/old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dup := write("dup.yaml", strings.Replace(string(old), "  scope: Namespaced\n", "  scope: Namespaced\n  scope: Cluster\n", 1))
	typo := write("typo.yaml", strings.Replace(string(old), "    storage: true\n", "    storage: true\n    deprecatd: true\n", 1))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		// The file, the document, then yaml's own words (the line of each key).
		{"a duplicate key, checked", []string{"check", "-f", dup, "--against-file", "testdata/check/old.yaml"}, "already defined"},
		{"a duplicate key, as the old release", []string{"check", "-f", "testdata/check/old.yaml", "--against-file", dup}, "already defined"},
		{"a misspelt field", []string{"status", "-f", typo}, `unknown field "spec.versions[0].deprecatd"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oneError(t, offline(t, tc.args...).mustCode(t, 1), tc.want)
		})
	}
	lines := strings.Split(strings.TrimRight(string(old), "\n"), "\n")
	list := write("list.yaml", "apiVersion: v1\nkind: List\nitems:\n- "+strings.Join(lines[1:], "\n  ")+"\n")
	r := offline(t, "status", "-f", list).mustCode(t, 0)
	contains(t, "status -f on a List", r.stdout, "gizmos.example.com")
}

// A release that removes a version its previous release no longer stored
// at: the files cannot tell whether a cluster that ran an older release
// still names it in storedVersions, where the API server refuses the CRD.
// That is a warning with the precondition and the command that ensures it,
// and a breaking change in the release notes.
func TestCheckFlagsARemovedVersionOffline(t *testing.T) {
	prev, err := os.ReadFile("testdata/check/new.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(prev)
	start, end := strings.Index(s, "  - name: v1beta1\n"), strings.Index(s, "  - name: v1\n")
	if start < 0 || end < start {
		t.Fatal("setup: no v1beta1 block before v1")
	}
	removed := filepath.Join(t.TempDir(), "removed.yaml")
	if err := os.WriteFile(removed, []byte(s[:start]+s[end:]), 0o644); err != nil {
		t.Fatal(err)
	}
	r := offline(t, "check", "-f", removed, "--against-file", "testdata/check/new.yaml").mustCode(t, 0)
	contains(t, "a removed version, offline", r.stdout, "removedVersionMayBeStored", "kubectl crdversion migrate gizmos.example.com")
	md := offline(t, "check", "-f", removed, "--against-file", "testdata/check/new.yaml", "-o", "markdown").mustCode(t, 0)
	breaking := md.stdout[strings.Index(md.stdout, "## Breaking changes"):strings.Index(md.stdout, "## Upgrade steps")]
	contains(t, "release notes", breaking, "v1beta1 is removed from spec.versions")
	offline(t, "check", "-f", removed, "--against-file", "testdata/check/new.yaml", "--strict").mustCode(t, 3)
}

// A CRD the previous release's files have and the next one's lack is
// deleted, with every object of it, by an apply that prunes (Argo CD,
// Flux): an error, not "nothing found". A new group for the same kind and
// plural is named as the rename it is, with the steps that move the
// objects. The files are only read.
func TestCheckFilesFindADroppedCRD(t *testing.T) {
	oldRaw, err := os.ReadFile("testdata/check/old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := string(oldRaw)
	// The next release moves Gizmo from example.com to example.org.
	renamed := write("renamed.yaml", strings.NewReplacer("name: gizmos.example.com", "name: gizmos.example.org", "group: example.com", "group: example.org").Replace(old))
	if !strings.Contains(read(t, renamed), "group: example.org") {
		t.Fatal("setup: the group was not replaced")
	}
	before := map[string]string{"testdata/check/old.yaml": old, renamed: read(t, renamed)}

	r := offline(t, "check", "-f", renamed, "--against-file", "testdata/check/old.yaml").mustCode(t, 3)
	contains(t, "a renamed group", r.stdout, "crdRenamed", "gizmos.example.com",
		"which have gizmos.example.org, the same kind (Gizmo, plural gizmos) under group example.org",
		"objects do not move between groups",
		"deletes gizmos.example.com and, with it, every object of it", "a plain kubectl apply leaves it",
		"fix gizmos.example.com (crdRenamed):",
		"1. keep gizmos.example.com in the manifests beside gizmos.example.org until its objects are moved",
		"2. create each object again under example.org (apiVersion: example.org/v1beta1",
		"1 error")
	if strings.Contains(r.stdout, "nothing found") {
		t.Errorf("a dropped CRD reported as nothing found:\n%s", r.stdout)
	}

	// A CRD dropped outright: the other documents of the old files are
	// compared as before, and -o json names the kind.
	sprockets := strings.NewReplacer("gizmos.example.com", "sprockets.example.com", "kind: Gizmo, listKind: GizmoList, plural: gizmos, singular: gizmo", "kind: Sprocket, listKind: SprocketList, plural: sprockets, singular: sprocket").Replace(old)
	both := write("both.yaml", old+"---\n"+sprockets)
	before[both] = read(t, both)
	r = offline(t, "check", "-f", "testdata/check/old.yaml", "--against-file", both, "-o", "json").mustCode(t, 3)
	var doc report.CheckReport
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r.stdout)
	}
	if len(doc.Findings) != 1 || doc.Errors != 1 {
		t.Fatalf("want one finding, the dropped CRD: %+v", doc.Findings)
	}
	if f := doc.Findings[0]; f.Kind != "dropped" || f.Rule != "crdDropped" || f.CRD != "sprockets.example.com" || f.Severity != "error" ||
		!strings.Contains(f.Message, "an apply that prunes (Argo CD or Flux with pruning, kubectl apply --prune) deletes sprockets.example.com and, with it, every object of it; a plain kubectl apply leaves it") {
		t.Errorf("finding %+v", f)
	}

	for p, content := range before {
		if read(t, p) != content {
			t.Errorf("%s was changed by check", p)
		}
	}
}

// Against a cluster, a chart whose CRD moves to another group: the live
// CRD of the old group, with its objects, is what a pruning sync deletes.
// It is named as a rename with how many objects stay behind where the
// chart's marks say the same source applied it; a CRD of the same kind
// that another chart applied is not reported, one that nothing tells of is
// a warning; the other live CRDs, which the chart never had, are not
// reported; the cluster and the files are left as they were.
func TestCheckFindsARenameOnTheCluster(t *testing.T) {
	e := newEnv(t, demoObjects)
	// Helm installed the chart's CRD under storage.example.com, from its
	// templates/ (which a helm upgrade prunes too): so its marks say.
	e.kubectl("label", "crd", "backups.storage.example.com", "helm.sh/chart=backups-1.4.0").mustCode(t, 0)
	e.kubectl("annotate", "crd", "backups.storage.example.com", "meta.helm.sh/release-name=backups", "meta.helm.sh/release-namespace=apps").mustCode(t, 0)
	live := e.crd("backups.storage.example.com")
	// manifest is the chart's next CRD as helm template renders it, the
	// group moved to storage.example.org, labelled with its chart.
	manifest := func(chart string) string {
		t.Helper()
		crd := apiextensionsv1.CustomResourceDefinition{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
			ObjectMeta: metav1.ObjectMeta{Name: "backups.storage.example.org"}, Spec: *live.Spec.DeepCopy()}
		crd.Spec.Group = "storage.example.org"
		if chart != "" {
			crd.Labels = map[string]string{"helm.sh/chart": chart, "app.kubernetes.io/managed-by": "Helm"}
		}
		raw, err := yaml.Marshal(crd)
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	next := manifest("backups-2.0.0")
	file := filepath.Join(t.TempDir(), "chart-crds.yaml")
	if err := os.WriteFile(file, []byte(next), 0o644); err != nil {
		t.Fatal(err)
	}
	before := e.crdVersions()

	r := e.plugin("check", "-f", file).mustCode(t, 3)
	contains(t, "a renamed group against the cluster", r.stdout, "error", "crdRenamed", "backups.storage.example.com",
		fmt.Sprintf("is on the cluster with %d objects", demoObjects/3),
		"which have backups.storage.example.org, the same kind (Backup, plural backups) under group storage.example.org: a group rename (both from Helm chart backups), and objects do not move between groups",
		fmt.Sprintf("deletes backups.storage.example.com and, with it, all %d objects of it", demoObjects/3),
		"1. keep backups.storage.example.com in the manifests beside backups.storage.example.org until its objects are moved",
		"1 error")
	for _, other := range []string{"certificates.pki.example.com", "clusterpolicies.policy.example.com", "gadgets.example.com"} {
		if strings.Contains(r.stdout, other) {
			t.Errorf("%s, which the chart never had, is reported:\n%s", other, r.stdout)
		}
	}
	sameCRDs(t, before, e.crdVersions()) // nothing created, nothing changed
	if got := read(t, file); got != next {
		t.Errorf("%s was changed by check", file)
	}

	// Another chart's CRD of the same kind and plural (Istio's Gateway
	// beside the Gateway API's) is not a rename.
	r = e.kubectlIn(manifest("restic-1.0.0"), "crdversion", "check", "-f", "-").mustCode(t, 0)
	contains(t, "another chart", r.stdout, "1 CRD checked against the cluster: nothing found")
	// Where nothing tells, a warning.
	r = e.kubectlIn(manifest(""), "crdversion", "check", "-f", "-").mustCode(t, 0)
	contains(t, "nothing tells", r.stdout, "warning", "crdRenamed", "if they replace it (nothing tells", "0 errors, 1 warning")

	// The chart that keeps both while the objects move: no rename to report.
	keep := live.DeepCopy()
	keep.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
	keep.ObjectMeta = metav1.ObjectMeta{Name: live.Name}
	keep.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	rawKeep, err := yaml.Marshal(keep)
	if err != nil {
		t.Fatal(err)
	}
	r = e.kubectlIn(next+"---\n"+string(rawKeep), "crdversion", "check", "-f", "-").mustCode(t, 0)
	contains(t, "both CRDs in the chart", r.stdout, "2 CRDs checked against the cluster: nothing found")
	sameCRDs(t, before, e.crdVersions())
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// One Helm release installed backups and certificates; its next chart
// has backups only. check -f on the cluster names certificates as dropped
// (an upgrade that prunes deletes it with every object of it), counted;
// CRDs that release never installed are not reported.
func TestCheckFindsACRDTheReleaseDrops(t *testing.T) {
	e := newEnv(t, demoObjects)
	for _, crd := range []string{"backups.storage.example.com", "certificates.pki.example.com"} {
		e.kubectl("annotate", "crd", crd, "meta.helm.sh/release-name=shop", "meta.helm.sh/release-namespace=apps").mustCode(t, 0)
	}
	live := e.crd("backups.storage.example.com")
	next := apiextensionsv1.CustomResourceDefinition{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: live.Name}, Spec: *live.Spec.DeepCopy()}
	raw, err := yaml.Marshal(next)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := e.clients.Dynamic.Resource(schema.GroupVersionResource{Group: "pki.example.com", Version: stages.StorageVersion(e.crd("certificates.pki.example.com")), Resource: "certificates"}).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := e.crdVersions()
	r := e.kubectlIn(string(raw), "crdversion", "check", "-f", "-").mustCode(t, 3)
	contains(t, "the dropped CRD", r.stdout, "error", "crdDropped", "certificates.pki.example.com",
		fmt.Sprintf("is on the cluster with %d objects", len(certs.Items)), "1 error")
	for _, other := range []string{"clusterpolicies.policy.example.com", "gadgets.example.com"} {
		if strings.Contains(r.stdout, other) {
			t.Errorf("%s, which the release never installed, is reported:\n%s", other, r.stdout)
		}
	}
	sameCRDs(t, before, e.crdVersions())
}
