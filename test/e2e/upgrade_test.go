package e2e

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
)

// A release that removes v1beta1, which objects are still stored at and whose managedFields
// entries they carry (Knative Serving's DomainMapping v1alpha1): applied as it is, the API
// server refuses it; once storedVersions is pruned, every server-side apply of those objects
// fails. upgrade walks the plugin's steps up to the owner's apply, in an order that leaves no
// window, and after the apply finishes with exit 0; status --release and check name the same
// first step; the dry run changes nothing. etcd is the ground truth at the end.
func TestUpgradeWalksToTheRelease(t *testing.T) {
	e := newEnv(t, 0)
	const group, name, objects = "upgrade.example.com", "parts.upgrade.example.com", 5
	release := func(versions ...fixtures.Version) string {
		return writeCRD(t, fixtures.CRD(group, "Part", "parts", apiextensionsv1.NamespaceScoped, false, versions...))
	}
	applyCRD := func(file string) {
		t.Helper()
		e.kubectl("apply", "--server-side", "-f", file).mustCode(t, 0)
		if _, err := e.clients.WaitEstablished(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	parts := func(version string) string {
		var b strings.Builder
		for i := range objects {
			fmt.Fprintf(&b, "---\napiVersion: %s/%s\nkind: Part\nmetadata:\n  name: part-%d\n  namespace: team-a\nspec:\n  size: %d\n", group, version, i, i)
		}
		file := filepath.Join(t.TempDir(), "parts-"+version+".yaml")
		if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	applyCRD(release(fixtures.Version{Name: "v1beta1", Served: true, Storage: true}, fixtures.Version{Name: "v1", Served: true}))
	e.kubectl("apply", "--server-side", "--field-manager=parts-controller", "-f", parts("v1beta1")).mustCode(t, 0)
	applyCRD(release(fixtures.Version{Name: "v1", Served: true, Storage: true}, fixtures.Version{Name: "v1beta1", Served: true}))
	next := release(fixtures.Version{Name: "v1", Served: true, Storage: true})

	// The dry run: the plan, nothing sent.
	before := e.crd(name)
	plan := e.plugin("upgrade", "-f", next, "--dry-run=client", "-o", "json").mustCode(t, 3)
	var doc report.UpgradeReport
	if err := json.Unmarshal([]byte(plan.stdout), &doc); err != nil || len(doc.CRDs) != 1 {
		t.Fatalf("upgrade --dry-run=client -o json: %v\n%s", err, plan.stdout)
	}
	var got []string
	for _, w := range doc.CRDs[0].Steps {
		got = append(got, string(w.Phase)+": "+cmp.Or(w.Command, w.Text))
	}
	want := []string{
		"before: kubectl crdversion migrate " + name,
		"before: kubectl crdversion migrate " + name + " --clean-managed-fields-of=v1beta1",
		"apply: kubectl apply --server-side -f " + next,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("plan:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if after := e.crd(name); after.ResourceVersion != before.ResourceVersion {
		t.Errorf("--dry-run=client changed the CRD (resourceVersion %s → %s)", before.ResourceVersion, after.ResourceVersion)
	}

	// status --release and check give the same first step.
	st := e.plugin("status", name, "--release", next, "-o", "json").mustCode(t, 0)
	var sdoc report.StatusReport
	if err := json.Unmarshal([]byte(st.stdout), &sdoc); err != nil || len(sdoc.Items) != 1 {
		t.Fatalf("status --release -o json: %v\n%s", err, st.stdout)
	}
	if it := sdoc.Items[0]; !it.Release || "before: "+it.Next.Command != want[0] {
		t.Errorf("status --release: next %+v (release %v), want %q", it.Next, it.Release, want[0])
	}
	ck := e.plugin("check", "-f", next, "-o", "json").mustCode(t, 3)
	var cdoc report.CheckReport
	if err := json.Unmarshal([]byte(ck.stdout), &cdoc); err != nil {
		t.Fatalf("check -o json: %v\n%s", err, ck.stdout)
	}
	i := slices.IndexFunc(cdoc.Findings, func(f results.Finding) bool { return f.Rule == "storedVersionRemoved" })
	if i < 0 || len(cdoc.Findings[i].Fix) == 0 || "before: "+cdoc.Findings[i].Fix[0].Command != want[0] {
		t.Errorf("check: storedVersionRemoved's fix does not start with the plan's first step %q:\n%s", want[0], ck.stdout)
	}
	// Applied now, the API server refuses the release: the plan is what makes it apply.
	if r := e.kubectl("apply", "--server-side", "--dry-run=server", "-f", next); r.code == 0 || !strings.Contains(r.stderr, "storedVersions") {
		t.Fatalf("the release applied before the walk: exit %d, %s", r.code, r.stderr)
	}

	// The walk, up to the owner's apply, its cluster named by --kubeconfig alone: every step
	// it takes must go there too, never to KUBECONFIG's (here, no cluster at all).
	r, err := plugintest.Kubectl(t.Context(), filepath.Join(t.TempDir(), "none"), t.TempDir(), "",
		"crdversion", "upgrade", "-f", next, "--switch-grace=0", "--kubeconfig", e.sb.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	walk := result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}.mustCode(t, 3)
	t.Logf("upgrade:\n%s%s", walk.stdout, walk.stderr)
	contains(t, "upgrade's plan", walk.stdout, "apply the release: kubectl apply --server-side -f "+next)
	contains(t, "upgrade's words", walk.stderr, "apply the release (kubectl apply --server-side -f "+next+"), then run this again")
	crd := e.crd(name)
	if v := specVersion(crd, "v1beta1"); v == nil || !v.Served || !slices.Equal(crd.Status.StoredVersions, []string{"v1"}) {
		t.Fatalf("before the apply: v1beta1 %+v, storedVersions %v; want v1beta1 as the release found it, storedVersions [v1]", v, crd.Status.StoredVersions)
	}
	list, lerr := e.clients.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "parts"}).Namespace("team-a").List(t.Context(), metav1.ListOptions{})
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, o := range list.Items {
		for _, mf := range o.GetManagedFields() {
			if mf.APIVersion != group+"/v1" {
				t.Errorf("before the apply, %s keeps a managedFields entry at %s (%s)", o.GetName(), mf.APIVersion, mf.Manager)
			}
		}
	}
	// Between the steps the objects' own client applies them, at the version the release keeps.
	e.kubectl("apply", "--server-side", "--field-manager=parts-controller", "-f", parts("v1")).mustCode(t, 0)

	// The owner's apply, as printed; the client's apply after it; the walk's end.
	e.kubectl("apply", "--server-side", "-f", next).mustCode(t, 0)
	waitGone(t, e, group+"/v1beta1")
	e.kubectl("apply", "--server-side", "--field-manager=parts-controller", "-f", parts("v1")).mustCode(t, 0)
	done := e.plugin("upgrade", "-f", next, "--switch-grace=0").mustCode(t, 0)
	contains(t, "upgrade after the apply", done.stdout, "nothing left to do")
	counts, err := e.sb.StoredAPIVersions(t.Context(), group, "parts")
	if err != nil || len(counts) != 1 || counts[group+"/v1"] != objects {
		t.Errorf("etcd at the end: %v (%v), want all %d at %s/v1", counts, err, objects, group)
	}
	if it := e.statusDoc(t, name, 0); it.Next.Action != lifecycle.ActionNone || it.StaleManagedFields != nil {
		t.Errorf("status at the end: next %+v, stale %+v", it.Next, it.StaleManagedFields)
	}
}

// A release read from stdin, as `helm template | upgrade -f -` gives it, that drops today's
// storage version for one the cluster lacks (Kueue v0.9's MultiKueue): the walk adds the new
// version from the release (written to a file of its own: stdin is read once), bridges it,
// switches storage, re-stores and prunes, then stops for the apply; after it, exit 0.
func TestUpgradeFromStdinAddsTheNewVersion(t *testing.T) {
	e := newEnv(t, 0)
	const group, name, objects = "stdin.example.com", "gears.stdin.example.com", 4
	old := writeCRD(t, fixtures.CRD(group, "Gear", "gears", apiextensionsv1.NamespaceScoped, false, fixtures.Version{Name: "v1alpha1", Served: true, Storage: true}))
	e.kubectl("apply", "--server-side", "-f", old).mustCode(t, 0)
	if _, err := e.clients.WaitEstablished(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range objects {
		fmt.Fprintf(&b, "---\napiVersion: %s/v1alpha1\nkind: Gear\nmetadata:\n  name: gear-%d\n  namespace: team-a\nspec:\n  size: %d\n", group, i, i)
	}
	e.kubectlIn(b.String(), "apply", "--server-side", "-f", "-").mustCode(t, 0)
	raw, err := os.ReadFile(writeCRD(t, fixtures.CRD(group, "Gear", "gears", apiextensionsv1.NamespaceScoped, false, fixtures.Version{Name: "v1beta1", Served: true, Storage: true})))
	if err != nil {
		t.Fatal(err)
	}
	release := string(raw)

	walk := e.kubectlIn(release, "crdversion", "upgrade", "-f", "-", "--switch-grace=0").mustCode(t, 3)
	t.Logf("upgrade:\n%s%s", walk.stdout, walk.stderr)
	contains(t, "upgrade's plan", walk.stdout, "apply the release: kubectl apply --server-side -f -")
	for _, step := range []string{"promote " + name + " v1beta1 --from-file ", "promote " + name + " v1beta1 --to bridge", "promote " + name + " v1beta1 --to deprecated", "migrate " + name} {
		contains(t, "the steps taken", walk.stderr, step)
	}
	crd := e.crd(name)
	if storage := stages.StorageVersion(crd); storage != "v1beta1" || !slices.Equal(crd.Status.StoredVersions, []string{"v1beta1"}) {
		t.Fatalf("before the apply: storage %s, storedVersions %v; want v1beta1 alone", storage, crd.Status.StoredVersions)
	}
	e.kubectlIn(release, "apply", "--server-side", "-f", "-").mustCode(t, 0)
	waitGone(t, e, group+"/v1alpha1")
	e.kubectlIn(release, "crdversion", "upgrade", "-f", "-").mustCode(t, 0)
	counts, err := e.sb.StoredAPIVersions(t.Context(), group, "gears")
	if err != nil || len(counts) != 1 || counts[group+"/v1beta1"] != objects {
		t.Errorf("etcd at the end: %v (%v), want all %d at %s/v1beta1", counts, err, objects, group)
	}
}

// A release that no longer ships a CRD of its group while the cluster holds its objects (MetalLB
// v0.14's AddressPool): the plan says so first, naming the objects, whatever else it plans.
func TestUpgradeSaysWhatTheReleaseDrops(t *testing.T) {
	e := newEnv(t, 0)
	const group = "drop.example.com"
	for _, kind := range []string{"Pool", "Peer"} {
		crd := writeCRD(t, fixtures.CRD(group, kind, strings.ToLower(kind)+"s", apiextensionsv1.NamespaceScoped, false, fixtures.Version{Name: "v1", Served: true, Storage: true}))
		e.kubectl("apply", "--server-side", "-f", crd).mustCode(t, 0)
		if _, err := e.clients.WaitEstablished(t.Context(), strings.ToLower(kind)+"s."+group); err != nil {
			t.Fatal(err)
		}
	}
	e.kubectlIn("apiVersion: "+group+"/v1\nkind: Pool\nmetadata: {name: pool-0, namespace: metallb-system}\nspec: {size: 1}\n---\napiVersion: "+group+"/v1\nkind: Pool\nmetadata: {name: pool-1, namespace: metallb-system}\nspec: {size: 2}\n",
		"apply", "--server-side", "-f", "-").mustCode(t, 0)
	release := writeCRD(t, fixtures.CRD(group, "Peer", "peers", apiextensionsv1.NamespaceScoped, false, fixtures.Version{Name: "v1", Served: true, Storage: true}))
	before := e.crdVersions()
	r := e.plugin("upgrade", "-f", release, "--dry-run=client").mustCode(t, 3)
	t.Logf("upgrade:\n%s%s", r.stdout, r.stderr)
	contains(t, "upgrade's plan", r.stdout, "ERROR: pools."+group+" is on the cluster with 2 objects", "metallb-system/pool-0", "what the release drops (above) is left to decide")
	var doc report.UpgradeReport
	if err := json.Unmarshal([]byte(e.plugin("upgrade", "-f", release, "--dry-run=client", "-o", "json").mustCode(t, 3).stdout), &doc); err != nil || len(doc.Dropped) != 1 || doc.Dropped[0].CRD != "pools."+group {
		t.Errorf("upgrade -o json: dropped %+v (%v), want pools.%s", doc.Dropped, err, group)
	}
	sameCRDs(t, before, e.crdVersions())
}
