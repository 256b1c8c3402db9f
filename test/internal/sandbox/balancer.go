package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
)

// Balancer is a TCP load balancer in front of several API servers that
// sends each new connection to the next, as a Service's virtual IP or a
// cloud L4 balancer does: a client keeps its server while it keeps its
// connection, and may meet another on the next.
type Balancer struct {
	listener   net.Listener
	backends   []string
	conns      []atomic.Int64
	next       atomic.Uint64
	config     *rest.Config
	kubeconfig string
}

// Balance starts a balancer in front of servers, which must share a token
// (a sandbox's do), and writes a kubeconfig for it at kubeconfig.
func Balance(kubeconfig string, servers ...*rest.Config) (*Balancer, error) {
	if len(servers) == 0 {
		return nil, errors.New("no servers to balance")
	}
	b := &Balancer{kubeconfig: kubeconfig, conns: make([]atomic.Int64, len(servers))}
	for _, s := range servers {
		u, err := url.Parse(s.Host)
		if err != nil {
			return nil, err
		}
		if s.BearerToken != servers[0].BearerToken {
			return nil, fmt.Errorf("%s has a token of its own", s.Host)
		}
		b.backends = append(b.backends, u.Host)
	}
	var err error
	if b.listener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, err
	}
	// Each server has a certificate of its own behind the one address: it
	// cannot be verified, a test balancer's compromise.
	b.config = &rest.Config{
		Host:            "https://" + b.listener.Addr().String(),
		BearerToken:     servers[0].BearerToken,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
	}
	if err := WriteKubeconfig(kubeconfig, b.config); err != nil {
		b.listener.Close()
		return nil, err
	}
	go b.serve()
	return b, nil
}

// BalanceT starts a balancer for a test and stops it when the test ends.
func BalanceT(t testing.TB, servers ...*rest.Config) *Balancer {
	t.Helper()
	b, err := Balance(filepath.Join(t.TempDir(), "kubeconfig-balanced"), servers...)
	if err != nil {
		t.Fatalf("starting a balancer: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

// RestConfig returns a copy of the client config for the balancer.
func (b *Balancer) RestConfig() *rest.Config { return rest.CopyConfig(b.config) }

// Kubeconfig is the path of a kubeconfig for the balancer.
func (b *Balancer) Kubeconfig() string { return b.kubeconfig }

// Connections counts the connections sent to each server, in the order
// given to Balance.
func (b *Balancer) Connections() []int64 {
	n := make([]int64, len(b.conns))
	for i := range b.conns {
		n[i] = b.conns[i].Load()
	}
	return n
}

// Close stops accepting connections; open ones end with their servers.
func (b *Balancer) Close() { _ = b.listener.Close() }

func (b *Balancer) serve() {
	for {
		in, err := b.listener.Accept()
		if err != nil {
			return
		}
		i := (b.next.Add(1) - 1) % uint64(len(b.backends))
		b.conns[i].Add(1)
		go relay(in, b.backends[i])
	}
}

// relay copies both ways; either side ending ends the other.
func relay(in net.Conn, backend string) {
	defer in.Close()
	out, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	defer out.Close()
	go func() {
		_, _ = io.Copy(out, in)
		_ = out.(*net.TCPConn).CloseWrite()
	}()
	_, _ = io.Copy(in, out)
}
