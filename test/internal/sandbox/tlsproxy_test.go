package sandbox

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// One client connection, one certificate (the proxy's), yet its requests
// reach both servers in turn; a watch streams through.
func TestTLSProxySpreadsRequestsOfOneConnection(t *testing.T) {
	s := StartT(t, Options{})
	other := s.AddAPIServerT(t, ServerOptions{})
	configs := []*rest.Config{s.RestConfig(), other.RestConfig()}
	p := TerminateTLS(t, configs...)

	block, _ := pem.Decode(p.RestConfig().CAData)
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	backendLeaf := func(i int) []byte { // the serving certificate, first in CAData
		block, _ := pem.Decode(configs[i].CAData)
		return block.Bytes
	}
	cfg := p.RestConfig()
	var dials atomic.Int64
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var seen []byte
	for i := range 4 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, cfg.Host+"/apis/apiextensions.k8s.io/v1", nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
			t.Fatalf("request %d: %s over %s", i, resp.Status, resp.Proto)
		}
		leaf := resp.TLS.PeerCertificates[0]
		if err := leaf.CheckSignatureFrom(ca); err != nil {
			t.Errorf("request %d: a certificate not the proxy's: %v", i, err)
		}
		if seen != nil && !bytes.Equal(seen, leaf.Raw) || bytes.Equal(leaf.Raw, backendLeaf(0)) || bytes.Equal(leaf.Raw, backendLeaf(1)) {
			t.Errorf("request %d: the client saw another certificate than the proxy's", i)
		}
		seen = leaf.Raw
	}
	if got := dials.Load(); got != 1 {
		t.Errorf("%d connections dialed, want the 4 requests on 1", got)
	}
	if got := p.Requests(); !slices.Equal(got, []int64{2, 2}) {
		t.Errorf("Requests() = %v, want [2 2]", got)
	}

	// HTTP/1.1 clients are served too.
	h1 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: x509.NewCertPool()}, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	h1.TLSClientConfig.RootCAs.AddCert(ca)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, cfg.Host+"/apis/apiextensions.k8s.io/v1", nil)
	req.Header.Set("Authorization", "Bearer "+cfg.BearerToken)
	resp, err := h1.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 1 {
		t.Errorf("HTTP/1.1: %s over %s", resp.Status, resp.Proto)
	}

	// A watch's events come through as they happen.
	pc, err := fixtures.NewClients(p.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	w, err := pc.CRDs.ApiextensionsV1().CustomResourceDefinitions().Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	c, err := fixtures.NewClients(s.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	crd := fixtures.CRD("example.com", "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1", Served: true, Storage: true})
	if _, err := c.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(30 * time.Second)
	for added := false; !added; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch through the proxy ended")
			}
			added = ev.Type == watch.Added
		case <-deadline:
			t.Fatal("no ADDED event through the proxy in 30s")
		}
	}

	kc, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig())
	if err != nil || kc.Host != cfg.Host || !bytes.Equal(kc.CAData, cfg.CAData) || kc.BearerToken != cfg.BearerToken {
		t.Fatalf("kubeconfig: %+v, %v", kc, err)
	}
}
