package e2e

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// status sends one request however many CRDs there are, and one list of
// objects (a page of their metadata) per CRD whose spec changed since it
// was created, for managedFields entries at versions it no longer serves;
// -o wide adds one object count per CRD where that list did not count
// them, and nothing else. The count comes from client-go's own log of
// every request (-v=6) of the real binary.
func TestStatusRequestCount(t *testing.T) {
	e := newEnv(t, 0)
	const crds = 50
	if err := e.clients.InstallCRDs(t.Context(), crds); err != nil {
		t.Fatal(err)
	}

	r := e.plugin("status", "-v=6").mustCode(t, 0)
	// Each CRD starts one row in the versions table and one in the next-step table.
	rows := 0
	for line := range strings.Lines(r.stdout) {
		if strings.HasPrefix(line, "things.g") {
			rows++
		}
	}
	if rows != 2*crds {
		t.Errorf("status printed %d CRD rows, want %d", rows, 2*crds)
	}
	// One list of the CRDs and one of the cluster's own migrations
	// (StorageVersionMigrations), whatever the number of CRDs.
	if n := fixtures.Requests(r.stderr); n != 2 {
		t.Errorf("status sent %d requests for %d CRDs, want 2", n, crds)
	}

	r = e.plugin("status", "-o", "wide", "-v=6").mustCode(t, 0)
	if n := fixtures.Requests(r.stderr); n != 2+crds {
		t.Errorf("status -o wide sent %d requests for %d CRDs, want %d", n, crds, 2+crds)
	}

	// Three CRDs changed since they were created: their objects are
	// listed, which counts them for -o wide too.
	const changed = 3
	list, err := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range list.Items[:changed] {
		crd.Spec.Names.Categories = append(crd.Spec.Names.Categories, "changed")
		if _, err := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Update(t.Context(), &crd, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r = e.plugin("status", "-v=6").mustCode(t, 0)
	if n := fixtures.Requests(r.stderr); n != 2+changed {
		t.Errorf("status sent %d requests with %d CRDs changed, want %d", n, changed, 2+changed)
	}
	r = e.plugin("status", "-o", "wide", "-v=6").mustCode(t, 0)
	if n := fixtures.Requests(r.stderr); n != 2+crds {
		t.Errorf("status -o wide sent %d requests with %d CRDs changed, want %d", n, changed, 2+crds)
	}
}
