package e2e

import (
	"strings"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// status sends one request however many CRDs there are; -o wide adds one
// object count per CRD and nothing else. The count comes from client-go's
// own log of every request (-v=6) of the real binary.
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
}
