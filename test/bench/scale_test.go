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
// on kube-apiserver in a process of its own, a fresh one for each count,
// so neither the API server's memory nor a previous count's objects are
// the bench's: the plugin's peak RSS, and its objects/s as a share of
// what a no-op loop gets from the same server at the same count, must stay
// flat as the number grows. Beside each, the server's own peak RSS says
// what the count costs the control plane. The API server runs without its
// watch cache: with it, it holds every object decoded (23 KB each measured
// at 100,000), and a million would not fit in this machine's memory; lists
// and writes then read etcd, at every count alike.
func TestBenchScale(t *testing.T) {
	spec := os.Getenv("BENCH_SCALE")
	if spec == "" {
		t.Skip("set BENCH_SCALE=10000,100000,... (make bench-scale)")
	}
	bin := buildPlugin(t)
	rows := []string{"| objects | migrate obj/s | (a′) obj/s | × (a′) | plugin's peak RSS | API server + etcd peak RSS | install |", "|---|---|---|---|---|---|---|"}
	for _, field := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(field)
		if err != nil || n <= 0 {
			t.Fatalf("BENCH_SCALE: %q is not a count", field)
		}
		// A subtest, so its control plane stops before the next starts.
		t.Run(field, func(t *testing.T) {
			row := scaleRow(t, bin, n)
			t.Log(row)
			rows = append(rows, row)
		})
	}
	t.Logf("\nmigrate on kube-apiserver (no proxy, the full sandbox out of process, a fresh one per count):\n%s", strings.Join(rows, "\n"))
}

func scaleRow(t *testing.T, bin string, n int) string {
	c, fx, conn := startFull(t, "--watch-cache=false")
	status := fmt.Sprintf("/proc/%d/status", c.PID())
	start := time.Now()
	tg := installInBatches(t, fx, "scales", n)
	installed := time.Since(start)
	// No watch cache to warm: a list of every object here would only
	// cost minutes at a million.
	switchStorage(t, fx, conn, tg)
	took, rss, err := runPlugin(bin, "migrate")(t.Context(), conn, tg)
	if err != nil {
		t.Fatal(err)
	}
	assertMigrated(t, c, tg)
	// What the server itself gives at this count: the table's (a′), the
	// no-op loop that lists as it must, after one more switch. The count's
	// rate falling with the loop's is the server's; migrate's share of it
	// is the plugin's, and must stay flat.
	switchStorage(t, fx, conn, tg)
	loopTook, _, err := inChild("listed", "256")(t.Context(), conn, tg)
	if err != nil {
		t.Fatal(err)
	}
	assertMigrated(t, c, tg)
	rate, loopRate := float64(n)/took.Seconds(), float64(n)/loopTook.Seconds()
	return fmt.Sprintf("| %d | %.0f | %.0f | %.2f | %.0f MiB | %.1f GiB | %s |", n, rate, loopRate, rate/loopRate, float64(rss)/1024, float64(vmHWM(status))/(1<<20), installed.Round(time.Second))
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
