package usage

import (
	"crypto/sha256"
	"crypto/x509"
	"net/http"
	"sync"
)

// answeredBy tells the servers that answered apart by certificate. A run's count is one
// server's: where another server answered too, the one whose metrics were read saw only
// part, and another client's requests could make up the rest. An answer without a
// certificate (plain HTTP) proves nothing.
type answeredBy struct {
	mu      sync.Mutex
	servers map[[sha256.Size]byte]bool
	// seen spares a hash per answer: a connection's certificate is parsed once.
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

// sameServer says whether every answer of every set came from one and the same server.
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
