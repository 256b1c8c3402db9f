package cluster

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fullsandbox"
)

// Two kube-apiservers on one etcd behind a load balancer that sends each
// connection to the next: promote to deprecated (the storage switch), then
// migrate, while a client keeps creating objects through the second
// server. The plugin must wait until both serve the new storage version
// before it re-stores and prunes: at the end every etcd key is at it, and
// no pruned version is left in etcd.
func TestStorageSwitchAcrossTwoAPIServers(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(`shared-admin-token,shared-admin,shared-admin,"system:masters"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auth := "--token-auth-file=" + tokens
	one := fullsandbox.StartT(t, fullsandbox.Options{APIServerArgs: []string{auth}})
	two := fullsandbox.StartT(t, fullsandbox.Options{Etcd: one.EtcdEndpoint, APIServerArgs: []string{auth}})
	e := newEnv(t, one)
	w := e.installWidgets("twoservers", 50, false, "two-a")

	lb := roundRobin(t, host(t, one), host(t, two))
	kubeconfig := sharedTokenKubeconfig(t, lb)

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

func host(t *testing.T, c *fullsandbox.Cluster) string {
	t.Helper()
	cfg, err := c.RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// roundRobin is a TCP load balancer: each connection goes to the next
// backend, as a Service's virtual IP or a cloud L4 balancer does.
func roundRobin(t *testing.T, backends ...string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	var next atomic.Int64
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			backend := backends[int(next.Add(1)-1)%len(backends)]
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", backend)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in) }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return l.Addr().String()
}

// sharedTokenKubeconfig authenticates with the token both servers know.
// Each server has a serving certificate of its own behind the one
// address, so the certificate is not verified: a test proxy's compromise.
func sharedTokenKubeconfig(t *testing.T, addr string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["lb"] = &clientcmdapi.Cluster{Server: "https://" + addr, InsecureSkipTLSVerify: true}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "shared-admin-token"}
	kc.Contexts["lb"] = &clientcmdapi.Context{Cluster: "lb", AuthInfo: "admin"}
	kc.CurrentContext = "lb"
	path := filepath.Join(t.TempDir(), "kubeconfig-lb")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
