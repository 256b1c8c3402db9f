package fullsandbox

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Balanced is an HA control plane: several kube-apiservers on one etcd
// behind a TCP load balancer that sends each connection to the next, as
// a Service's virtual IP or a cloud L4 balancer does.
type Balanced struct {
	// Servers are the API servers; the first started etcd.
	Servers []*Cluster
	// Kubeconfig reaches them through the balancer, with a token every
	// server knows.
	Kubeconfig string
	// Connections counts the connections the balancer sent to each
	// server.
	Connections []*atomic.Int64
}

// StartBalancedT starts n API servers on one etcd behind a round-robin
// balancer, until the test ends.
func StartBalancedT(t testing.TB, n int) *Balanced {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(`shared-admin-token,shared-admin,shared-admin,"system:masters"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	auth := "--token-auth-file=" + tokens
	b := &Balanced{}
	var hosts []string
	for i := range n {
		// Each publishes an address of its own in the kubernetes service's
		// endpoints, as the servers of a real control plane do (the test
		// server publishes none by default; loopback addresses are refused
		// there).
		opts := Options{APIServerArgs: []string{auth, "--endpoint-reconciler-type=lease", fmt.Sprintf("--advertise-address=10.255.0.%d", i+1)}}
		if i > 0 {
			opts.Etcd = b.Servers[0].EtcdEndpoint
		}
		c := StartT(t, opts)
		cfg, err := c.RestConfig()
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(cfg.Host)
		if err != nil {
			t.Fatal(err)
		}
		b.Servers, hosts = append(b.Servers, c), append(hosts, u.Host)
		b.Connections = append(b.Connections, &atomic.Int64{})
	}
	b.Kubeconfig = tokenKubeconfig(t, roundRobin(t, hosts, b.Connections))
	b.waitPublished(t, n)
	return b
}

// waitPublished waits until the kubernetes service's EndpointSlices list
// every server, as each server's lease reconciler publishes itself a
// moment after it starts.
func (b *Balanced) waitPublished(t testing.TB, n int) {
	t.Helper()
	cfg, err := b.Servers[0].RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ready := 0
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		slices, err := kube.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
		if err != nil {
			return false, nil
		}
		ready = 0
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready == nil || *e.Conditions.Ready {
					ready += len(e.Addresses)
				}
			}
		}
		return ready >= n, nil
	})
	if err != nil {
		t.Fatalf("the kubernetes service lists %d of %d API servers: %v", ready, n, err)
	}
}

// roundRobin listens on a port of its own and sends each connection to
// the next backend.
func roundRobin(t testing.TB, backends []string, counts []*atomic.Int64) string {
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
			i := int(next.Add(1)-1) % len(backends)
			counts[i].Add(1)
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", backends[i])
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

// tokenKubeconfig authenticates with the token every server knows. Each
// server has a serving certificate of its own behind the one address, so
// the certificate is not verified: a test balancer's compromise.
func tokenKubeconfig(t testing.TB, addr string) string {
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
