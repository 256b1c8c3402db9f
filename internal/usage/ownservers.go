package usage

import (
	"crypto/sha256"
	"crypto/x509"
	"net/http"
	"sync"
)

// answeredBy tells the API servers that answered a set of requests apart
// by their serving certificates. The count a run compares is one server's:
// where its requests, or the metrics reads, were answered by another
// server too (several API servers behind a load balancer), the server
// whose metrics were read saw only part of them, and another client's
// requests could make up exactly the rest. An answer that shows no
// certificate (plain HTTP) tells no server, and so proves nothing either.
type answeredBy struct {
	mu      sync.Mutex
	servers map[[sha256.Size]byte]bool
	// seen spares a hash for each answer: a connection's certificate is
	// parsed once, at its handshake, and every answer on it shares it.
	seen   map[*x509.Certificate]bool
	untold bool
}

func (a *answeredBy) saw(resp *http.Response) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if resp == nil || resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		a.untold = true
		return
	}
	cert := resp.TLS.PeerCertificates[0]
	if a.seen[cert] {
		return
	}
	if a.servers == nil {
		a.servers, a.seen = map[[sha256.Size]byte]bool{}, map[*x509.Certificate]bool{}
	}
	a.seen[cert] = true
	a.servers[sha256.Sum256(cert.Raw)] = true
}

// one is the single server every answer came from, if that is so.
func (a *answeredBy) one() ([sha256.Size]byte, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.untold || len(a.servers) != 1 {
		return [sha256.Size]byte{}, false
	}
	for s := range a.servers {
		return s, true
	}
	return [sha256.Size]byte{}, false
}

// sameServer says whether every answer of every set came from one server,
// the same one.
func sameServer(sets ...*answeredBy) bool {
	var first [sha256.Size]byte
	for i, s := range sets {
		one, ok := s.one()
		if !ok || i > 0 && one != first {
			return false
		}
		first = one
	}
	return len(sets) > 0
}

// metricsTransport notes which server answered each metrics read.
type metricsTransport struct {
	by   *answeredBy
	next http.RoundTripper
}

func (t metricsTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		t.by.saw(resp)
	}
	return resp, err
}

func (t metricsTransport) WrappedRoundTripper() http.RoundTripper { return t.next }
