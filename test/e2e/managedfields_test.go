package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// things writes n objects of things.ssa.example.com at version as a
// client's manifest.
func things(t *testing.T, version string, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: ssa.example.com/%s\nkind: Thing\nmetadata:\n  name: thing-%d\n  namespace: team-a\nspec:\n  size: %d\n", version, i, i)
	}
	file := filepath.Join(t.TempDir(), "things-"+version+".yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// statusDoc is status -o json of one CRD, with its exit code.
func (e *env) statusDoc(t *testing.T, name string, code int) report.StatusItem {
	t.Helper()
	r := e.plugin("status", name, "-o", "json").mustCode(t, code)
	var doc report.StatusReport
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Items) != 1 {
		t.Fatalf("status -o json: %v\n%s", err, r.stdout)
	}
	return doc.Items[0]
}

// Objects applied server-side at v1beta1 keep managedFields entries naming
// it after a migration re-stored them at v1. A release that stops serving
// v1beta1, then one that removes it, as a user applies them: once it is
// gone, the API server refuses every server-side apply of those objects.
// status names them (a count, the first names), says so before the
// removal too, and its next step, pasted, cleans the entries; after it
// status is clean, and the apply the API server refused goes through.
func TestStatusNamesManagedFieldsOfARemovedVersion(t *testing.T) {
	e := newEnv(t, 0)
	const name, objects = "things.ssa.example.com", 4
	release := func(versions ...fixtures.Version) {
		t.Helper()
		crd := fixtures.CRD("ssa.example.com", "Thing", "things", apiextensionsv1.NamespaceScoped, false, versions...)
		e.kubectl("apply", "--server-side", "-f", writeCRD(t, crd)).mustCode(t, 0)
		if _, err := e.clients.WaitEstablished(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	}
	release(fixtures.Version{Name: "v1beta1", Served: true, Storage: true}, fixtures.Version{Name: "v1", Served: true})
	e.kubectl("apply", "--server-side", "-f", things(t, "v1beta1", objects)).mustCode(t, 0)
	if it := e.statusDoc(t, name, 0); it.StaleManagedFields != nil {
		t.Fatalf("v1beta1 served: status found entries to drop: %+v", it.StaleManagedFields)
	}

	// The next release stores at v1; the objects are re-stored there and
	// storedVersions pruned.
	release(fixtures.Version{Name: "v1", Served: true, Storage: true}, fixtures.Version{Name: "v1beta1", Served: true})
	e.plugin("migrate", name, "--switch-grace=1s", "-q").mustCode(t, 0)
	// The one after stops serving v1beta1: nothing fails yet, status says
	// what will, and cleans the entries before the removal.
	release(fixtures.Version{Name: "v1", Served: true, Storage: true}, fixtures.Version{Name: "v1beta1"})
	it := e.statusDoc(t, name, 0)
	if s := it.StaleManagedFields; s == nil || s.Objects != objects || fmt.Sprint(s.Unserved) != "[v1beta1]" || len(s.Removed) != 0 {
		t.Errorf("v1beta1 unserved: staleManagedFields %+v, want %d objects at v1beta1, unserved", s, objects)
	}
	if want := "kubectl crdversion migrate " + name + " --clean-managed-fields"; it.Next.Command != want {
		t.Errorf("v1beta1 unserved: next %q (%s), want %q", it.Next.Command, it.Next.Reason, want)
	}

	// The release that removes it, applied as the others were.
	release(fixtures.Version{Name: "v1", Served: true, Storage: true})
	waitGone(t, e, "ssa.example.com/v1beta1")
	applied := things(t, "v1", objects)
	refused := e.kubectl("apply", "--server-side", "-f", applied)
	if refused.code == 0 || !strings.Contains(refused.stderr, "request to convert CR to an invalid group/version") {
		t.Fatalf("the API server took a server-side apply of objects with entries at a removed version (exit %d):\n%s", refused.code, refused.stderr)
	}

	table := e.plugin("status", name).mustCode(t, 3)
	t.Logf("status:\n%s", table.stdout)
	contains(t, "status table", table.stdout,
		"run: kubectl crdversion migrate "+name+" --clean-managed-fields (drop the managedFields entries at v1beta1 (gone from spec.versions) from 4 objects",
		"4 objects (team-a/thing-0, team-a/thing-1, team-a/thing-2 and 1 more) carry managedFields entries recorded at v1beta1, which the CRD no longer has")
	it = e.statusDoc(t, name, 3)
	s := it.StaleManagedFields
	if s == nil || s.Objects != objects || fmt.Sprint(s.Removed) != "[v1beta1]" || len(s.First) != 3 {
		t.Fatalf("staleManagedFields %+v, want %d objects, 3 named, v1beta1 removed", s, objects)
	}
	if !slices.ContainsFunc(it.Problems, func(p lifecycle.Problem) bool { return p.Severity == "error" && strings.Contains(p.Message, "v1beta1") }) {
		t.Errorf("problems %+v: want the error", it.Problems)
	}
	// The command status names, pasted.
	pasted := strings.Fields(strings.TrimPrefix(it.Next.Command, "kubectl crdversion "))
	fix := e.plugin(pasted...).mustCode(t, 0)
	t.Logf("%s:\n%s%s", it.Next.Command, fix.stdout, fix.stderr)

	it = e.statusDoc(t, name, 0)
	if it.StaleManagedFields != nil || it.Next.Command != "" || len(it.Problems) != 0 {
		t.Errorf("after %v: status still says %+v, next %+v, problems %+v", pasted, it.StaleManagedFields, it.Next, it.Problems)
	}
	e.kubectl("apply", "--server-side", "-f", applied).mustCode(t, 0)
}

// waitGone returns once discovery no longer serves groupVersion: the
// API server's CRD handler follows an update asynchronously.
func waitGone(t *testing.T, e *env, groupVersion string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := e.clients.CRDs.Discovery().ServerResourcesForGroupVersion(groupVersion)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("%s still served: %v", groupVersion, err)
	}
}
