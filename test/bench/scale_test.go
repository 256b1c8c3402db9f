package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// TestBenchScale migrates BENCH_SCALE objects (a list: 10000,100000,...)
// on kube-apiserver in a process of its own, so the plugin's peak RSS is
// its own and the API server's memory is not the bench's: objects/s and
// peak RSS must stay flat as the number grows.
func TestBenchScale(t *testing.T) {
	spec := os.Getenv("BENCH_SCALE")
	if spec == "" {
		t.Skip("set BENCH_SCALE=10000,100000,... (make bench-scale)")
	}
	c, fx, conn := startFull(t)
	bin := buildPlugin(t)
	rows := []string{"| objects | obj/s | peak RSS | install |", "|---|---|---|---|"}
	for i, field := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(field)
		if err != nil || n <= 0 {
			t.Fatalf("BENCH_SCALE: %q is not a count", field)
		}
		plural := fmt.Sprintf("scale%ds", i) // kind Scale<i>: one kind per CRD of the group
		start := time.Now()
		tg := installInBatches(t, fx, plural, n)
		installed := time.Since(start)
		flip(t, fx, conn, tg)
		took, rss, err := runPlugin(bin, "migrate")(t.Context(), conn, tg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.StoredAPIVersions(t.Context(), "bench.example.com", plural)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got["bench.example.com/"+tg.version] != n {
			t.Fatalf("%d objects not fully migrated to %s: %v", n, tg.version, got)
		}
		row := fmt.Sprintf("| %d | %.0f | %.0f MiB | %s |", n, float64(n)/took.Seconds(), float64(rss)/1024, installed.Round(time.Second))
		t.Log(row)
		rows = append(rows, row)
	}
	t.Logf("\nmigrate on kube-apiserver (no proxy, the full sandbox out of process):\n%s", strings.Join(rows, "\n"))
}

// installInBatches creates n objects 20,000 at a time, so the installer
// never holds them all.
func installInBatches(t *testing.T, fx fixtures.Clients, plural string, n int) *target {
	t.Helper()
	tg := install(t, fx, plural, 0, nil)
	gvr := schema.GroupVersionResource{Group: "bench.example.com", Version: "v1beta1", Resource: plural}
	kind := strings.ToUpper(plural[:1]) + plural[1:len(plural)-1]
	const batch = 20000
	for from := 0; from < n; from += batch {
		objs := make([]fixtures.Object, 0, batch)
		for i := from; i < min(from+batch, n); i++ {
			objs = append(objs, benchObject(i))
		}
		if err := fx.CreateObjects(t.Context(), gvr, kind, objs); err != nil {
			t.Fatal(err)
		}
	}
	tg.objects = n
	return tg
}
