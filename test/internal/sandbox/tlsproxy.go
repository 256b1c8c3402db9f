package sandbox

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// Proxy is a TLS-terminating reverse proxy in front of several API servers
// that sends each request to the next, as an L7 load balancer (Rancher's
// or Teleport's proxy, an ingress) does. Unlike a Balancer's clients, the
// proxy's see one certificate, its own, and may meet another server on
// every request of one connection: nothing they receive tells the servers
// apart.
type Proxy struct {
	listener   net.Listener
	server     *http.Server
	next       atomic.Uint64
	config     *rest.Config
	kubeconfig string
	token      string

	mu       sync.Mutex
	backends []*proxyBackend
	byHost   map[string]*http.Transport
	joining  []joining
	joined   int
}

// joining is a backend that enters the pool with the first request when matches.
type joining struct {
	when    func(*http.Request) bool
	backend *proxyBackend
	tr      *http.Transport
}

type proxyBackend struct {
	url      *url.URL
	requests atomic.Int64
}

// StartTLSProxy starts a proxy in front of servers, which must share a
// token (a sandbox's do), and writes a kubeconfig for it at kubeconfig.
func StartTLSProxy(kubeconfig string, servers ...*rest.Config) (*Proxy, error) {
	if len(servers) == 0 {
		return nil, errors.New("no servers to proxy")
	}
	p := &Proxy{kubeconfig: kubeconfig, byHost: map[string]*http.Transport{}, token: servers[0].BearerToken}
	for _, s := range servers {
		if s.BearerToken != p.token {
			return nil, fmt.Errorf("%s has a token of its own", s.Host)
		}
		b, tr, err := p.backend(s)
		if err != nil {
			return nil, err
		}
		p.backends = append(p.backends, b)
		p.byHost[b.url.Host] = tr
	}
	cert, caPEM, err := proxyCertificate()
	if err != nil {
		return nil, err
	}
	if p.listener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return nil, err
	}
	token := p.token
	discard := log.New(io.Discard, "", 0) // a client gone mid-watch is no news
	rp := &httputil.ReverseProxy{
		// The backend is picked per request, not per connection.
		Rewrite: func(r *httputil.ProxyRequest) {
			b := p.pick(r.In)
			b.requests.Add(1)
			r.SetURL(b.url)
			if r.In.Header.Get("Authorization") == "" {
				r.Out.Header.Set("Authorization", "Bearer "+token)
			}
		},
		Transport:     byHost{p},
		FlushInterval: -1, // watches stream
		ErrorLog:      discard,
	}
	p.server = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Upgrade") != "" {
				http.Error(w, "the sandbox's TLS proxy does not upgrade connections", http.StatusNotImplemented)
				return
			}
			rp.ServeHTTP(w, r)
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
		ErrorLog:  discard,
	}
	p.config = &rest.Config{
		Host:            "https://" + p.listener.Addr().String(),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
	}
	if err := WriteKubeconfig(kubeconfig, p.config); err != nil {
		p.listener.Close()
		return nil, err
	}
	// ServeTLS offers h2 and http/1.1.
	go func() { _ = p.server.ServeTLS(p.listener, "", "") }()
	return p, nil
}

// TerminateTLS starts a proxy for a test and stops it when the test ends.
func TerminateTLS(t testing.TB, servers ...*rest.Config) *Proxy {
	t.Helper()
	p, err := StartTLSProxy(filepath.Join(t.TempDir(), "kubeconfig-proxied"), servers...)
	if err != nil {
		t.Fatalf("starting a TLS proxy: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// RestConfig returns a copy of the client config for the proxy: its CA,
// the servers' token.
func (p *Proxy) RestConfig() *rest.Config { return rest.CopyConfig(p.config) }

// Kubeconfig is the path of a kubeconfig for the proxy.
func (p *Proxy) Kubeconfig() string { return p.kubeconfig }

// Requests counts the requests sent to each server, in the order given,
// then those that joined, in the order they joined.
func (p *Proxy) Requests() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := make([]int64, len(p.backends))
	for i := range p.backends {
		n[i] = p.backends[i].requests.Load()
	}
	return n
}

// JoinWhen adds server to the pool with the first request that when
// matches, before that request is sent on: a backend whose health check
// just passed, in the middle of a client's run. server must share the
// others' token.
func (p *Proxy) JoinWhen(when func(*http.Request) bool, server *rest.Config) error {
	if server.BearerToken != p.token {
		return fmt.Errorf("%s has a token of its own", server.Host)
	}
	b, tr, err := p.backend(server)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.joining = append(p.joining, joining{when: when, backend: b, tr: tr})
	return nil
}

// Joined counts the backends that joined by JoinWhen.
func (p *Proxy) Joined() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.joined
}

func (p *Proxy) backend(s *rest.Config) (*proxyBackend, *http.Transport, error) {
	u, err := url.Parse(s.Host)
	if err != nil {
		return nil, nil, err
	}
	// Each backend verified against its own certificate, over HTTP/2 as
	// client-go speaks it.
	tlsConfig, err := rest.TLSConfigFor(s)
	if err != nil {
		return nil, nil, err
	}
	return &proxyBackend{url: u}, &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true,
		DialContext: (&net.Dialer{Timeout: 30 * time.Second}).DialContext}, nil
}

// pick lets in the backends r's arrival admits, then takes the next.
func (p *Proxy) pick(r *http.Request) *proxyBackend {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.joining = slices.DeleteFunc(p.joining, func(j joining) bool {
		if !j.when(r) {
			return false
		}
		p.backends = append(p.backends, j.backend)
		p.byHost[j.backend.url.Host] = j.tr
		p.joined++
		return true
	})
	return p.backends[(p.next.Add(1)-1)%uint64(len(p.backends))]
}

// Close stops the proxy and ends every connection through it.
func (p *Proxy) Close() {
	_ = p.server.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, tr := range p.byHost {
		tr.CloseIdleConnections()
	}
	for _, j := range p.joining {
		j.tr.CloseIdleConnections()
	}
}

// byHost sends a request with the transport of the backend it was
// rewritten to: each trusts its own server's certificate.
type byHost struct{ p *Proxy }

func (b byHost) RoundTrip(r *http.Request) (*http.Response, error) {
	b.p.mu.Lock()
	tr, ok := b.p.byHost[r.URL.Host]
	b.p.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no backend %s", r.URL.Host)
	}
	return tr.RoundTrip(r)
}

// proxyCertificate is a serving certificate for 127.0.0.1 and the PEM of
// the CA that signed it, both made for this proxy alone.
func proxyCertificate() (tls.Certificate, []byte, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	caTemplate := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sandbox-tls-proxy-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "sandbox-tls-proxy"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}
