package bench

import (
	"context"
	"os"
	"testing"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fullsandbox"
)

// TestBenchInTreeController times the real in-tree storage version
// migrator (kube-controller-manager, on kube-apiserver) on BENCH_N
// objects, beside this repository's re-implementation of its algorithm
// and the plugin's migrate, each on its own copy of the same objects on
// the same server, no proxy. The controller is timed from the creation of
// its StorageVersionMigration to Succeeded (polled every 50 ms), after a
// first small migration has waited out its start.
func TestBenchInTreeController(t *testing.T) {
	if os.Getenv("BENCH") == "" {
		t.Skip("set BENCH=1 (make bench)")
	}
	n := envInt("BENCH_N", 10000)
	c, fx, conn := startFull(t)
	kube, err := kubernetes.NewForConfig(conn.cfg)
	if err != nil {
		t.Fatal(err)
	}
	bin := buildPlugin(t)
	warmup := install(t, fx, "warmups", 10, nil)
	controller, reimpl, plugin := install(t, fx, "controllers", n, nil), install(t, fx, "reimpls", n, nil), install(t, fx, "plugins", n, nil)
	for _, tg := range []*target{warmup, controller, reimpl, plugin} {
		flip(t, fx, conn, tg)
	}
	// After the CRDs: its garbage collector discovers resources on start.
	c.StartControllerManager(t)
	// A first migration of a small resource waits out the controller's
	// start and its garbage collector's first sync, which a long-running
	// controller manager has behind it: the clock is for the work.
	migrateInTree(t, kube, warmup)
	controllerTook := migrateInTree(t, kube, controller)
	reimplTook, err := inTreeSVM(t.Context(), conn, reimpl)
	if err != nil {
		t.Fatal(err)
	}
	pluginTook, _, err := runPlugin(bin, "migrate")(t.Context(), conn, plugin)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range []*target{controller, reimpl, plugin} {
		assertMigrated(t, c, tg)
	}
	rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
	t.Logf("\n%d objects on kube-apiserver, no proxy:\n"+
		"| algorithm | obj/s | × in-tree controller |\n|---|---|---|\n"+
		"| in-tree StorageVersionMigration (kube-controller-manager), create → Succeeded | %.0f | 1.0 |\n"+
		"| its algorithm re-implemented (serial SSA patch, this bench's row) | %.0f | %.1f |\n"+
		"| kubectl crdversion migrate (--prune=false) | %.0f | %.1f |",
		n, rate(controllerTook), rate(reimplTook), controllerTook.Seconds()/reimplTook.Seconds(), rate(pluginTook), controllerTook.Seconds()/pluginTook.Seconds())
}

// migrateInTree has the in-tree controller migrate tg and returns the time
// from the StorageVersionMigration's creation to Succeeded.
func migrateInTree(t *testing.T, kube kubernetes.Interface, tg *target) time.Duration {
	t.Helper()
	start := time.Now()
	svm, err := kube.StoragemigrationV1().StorageVersionMigrations().Create(t.Context(), &svmv1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"},
		Spec:       svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: "bench.example.com", Resource: tg.plural}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var state results.ClusterMigration
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := kube.StoragemigrationV1().StorageVersionMigrations().Get(ctx, svm.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		state = cluster.ClusterMigrationOf(got)
		return state.Done(), nil
	})
	if err != nil || state.State != results.ClusterMigrationSucceeded {
		t.Fatalf("the controller's migration of %s: %v, %+v", tg.plural, err, state)
	}
	return time.Since(start)
}

// startFull starts a kube-apiserver (the full sandbox, out of process) for
// one bench, with clients that leave the pace to it.
func startFull(t *testing.T, apiServerArgs ...string) (*fullsandbox.Cluster, fixtures.Clients, conn) {
	t.Helper()
	c := fullsandbox.StartT(t, fullsandbox.Options{APIServerArgs: apiServerArgs})
	fx, direct := fullClients(t, c)
	return c, fx, direct
}

// fullClients are a bench's clients of one kube-apiserver, with no
// client-side limit.
func fullClients(t *testing.T, c *fullsandbox.Cluster) (fixtures.Clients, conn) {
	t.Helper()
	cfg, err := c.RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	fx, err := fixtures.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return fx, clientsFor(t, cfg, c.Kubeconfig)
}
