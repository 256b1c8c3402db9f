package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fullsandbox"
)

// Two kube-apiservers on one etcd behind a load balancer that sends each
// connection to the next: promote to deprecated (the storage switch), then
// migrate, while a client keeps creating objects through the second
// server. The plugin must wait until both serve the new storage version
// before it re-stores and prunes: at the end every etcd key is at it, and
// no pruned version is left in etcd.
func TestStorageSwitchAcrossTwoAPIServers(t *testing.T) {
	ha := fullsandbox.StartBalancedT(t, 2)
	one, two := ha.Servers[0], ha.Servers[1]
	e := newEnv(t, one)
	w := e.installWidgets("twoservers", 50, false, "two-a")
	kubeconfig := ha.Kubeconfig

	// A client of the second server only, creating objects at v1beta1 all
	// along: a server that stored them at v1beta1 after the prune would
	// leave keys at a pruned version.
	cfg, err := two.RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	writes := writeThrough(t, cfg, w)

	mustCode(t, e.pluginAs(kubeconfig, "promote", w.name(), "v1", "--to", "bridge"), 0)
	r := mustCode(t, e.pluginAs(kubeconfig, "promote", w.name(), "v1", "--to", "deprecated"), 0)
	contains(t, "promote --to deprecated", r.Stdout, "deprecated")
	r = mustCode(t, e.pluginAs(kubeconfig, "migrate", w.name(), "--switch-grace=5s"), 0)
	contains(t, "migrate", r.Stdout, "(pruned)")
	n := writes.stop()
	if n < 10 {
		t.Fatalf("the writer created only %d objects through the second server", n)
	}
	if got := e.crd(w.name()).Status.StoredVersions; !slices.Equal(got, []string{"v1"}) {
		t.Fatalf("storedVersions %v, want [v1]", got)
	}
	got := e.stored(w)
	if want := map[string]int{w.group + "/v1": got[w.group+"/v1"]}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v after the prune: keys at a pruned version", got)
	}
	t.Logf("%d objects written through the second server during promote and migrate; etcd: %v", n, got)
}

type writer struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	n      atomic.Int64
}

// writeThrough creates objects of w at v1beta1 through cfg's server until
// stopped, one every 20 ms.
func writeThrough(t *testing.T, cfg *rest.Config, w widgets) *writer {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	wr := &writer{cancel: cancel}
	wr.wg.Add(1)
	go func() {
		defer wr.wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": w.group + "/v1beta1", "kind": "Widget",
				"metadata": map[string]any{"name": fmt.Sprintf("late-%05d", i), "namespace": w.namespaces[0]},
				"spec":     map[string]any{"size": int64(i)},
			}}
			if _, err := dyn.Resource(w.gvr("v1beta1")).Namespace(w.namespaces[0]).Create(ctx, u, metav1.CreateOptions{}); err == nil {
				wr.n.Add(1)
			}
		}
	}()
	t.Cleanup(func() { wr.stop() })
	return wr
}

func (w *writer) stop() int64 {
	w.cancel()
	w.wg.Wait()
	return w.n.Load()
}

// Two kube-apiservers on one etcd behind a load balancer that sends each
// connection to the next, as an L4 balancer does: migrate's re-store
// spreads its writes over several connections, so each server takes a
// fair share of them, counted by each server's own
// apiserver_request_total. The control, --one-connection, sends every
// write of the pass to one server.
func TestAPassReachesEveryAPIServer(t *testing.T) {
	ha := fullsandbox.StartBalancedT(t, 2)
	servers := []*env{newEnv(t, ha.Servers[0]), newEnv(t, ha.Servers[1])}
	kubeconfig := ha.Kubeconfig

	// patches counts, on each server, the pass's writes of w's objects.
	patches := func(w widgets) []float64 {
		out := make([]float64, len(servers))
		for i, s := range servers {
			out[i] = s.metricSum("apiserver_request_total", `group="`+w.group+`"`, `resource="widgets"`, `verb="PATCH"`)
		}
		return out
	}
	const objects = 400
	spread := servers[0].installWidgets("spread", objects/2, true, "spread-a", "spread-b")
	pinned := servers[0].installWidgets("pinned", objects/2, true, "pinned-a", "pinned-b")

	r := mustCode(t, servers[0].pluginAs(kubeconfig, "migrate", spread.name(), "--switch-grace=0"), 0)
	contains(t, "migrate", r.Stderr, "the kubernetes service lists 2 API servers: requests over objects are spread over 8 connections")
	got := patches(spread)
	total := got[0] + got[1]
	if total < objects {
		t.Fatalf("the servers counted %v writes of %d objects", got, objects)
	}
	for i, n := range got {
		if n < total/4 {
			t.Errorf("server %d took %.0f of %.0f writes (%v): the pass did not reach every server", i+1, n, total, got)
		}
	}
	t.Logf("spread: the servers took %v of the pass's writes", got)

	r = mustCode(t, servers[0].pluginAs(kubeconfig, "migrate", pinned.name(), "--switch-grace=0", "--one-connection"), 0)
	contains(t, "migrate --one-connection", r.Stderr, "--one-connection sends every request over objects to one of them")
	got = patches(pinned)
	if min(got[0], got[1]) != 0 || max(got[0], got[1]) < objects {
		t.Errorf("--one-connection: the servers took %v of the pass's writes, want every one on one server", got)
	}
	t.Logf("one connection: the servers took %v of the pass's writes", got)
	for _, w := range []widgets{spread, pinned} {
		if got := servers[0].stored(w); got[w.group+"/v1"] != objects {
			t.Errorf("%s: etcd holds %v, want all %d objects at v1", w.name(), got, objects)
		}
	}
}
