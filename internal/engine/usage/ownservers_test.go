package usage

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"
)

// A count read on one server proves something of the run's requests only
// where that one server answered every one of them, and every read.
func TestSameServer(t *testing.T) {
	by := func(certs ...string) *answeredBy {
		a := &answeredBy{}
		for _, c := range certs {
			resp := &http.Response{}
			if c != "" {
				resp.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{Raw: []byte(c)}}}
			}
			a.saw(resp)
		}
		return a
	}
	for _, tc := range []struct {
		name string
		sets []*answeredBy
		want bool
	}{
		{"one server answered the run and the reads", []*answeredBy{by("a", "a"), by("a")}, true},
		{"the run spread over two servers", []*answeredBy{by("a", "b"), by("a")}, false},
		{"the reads from another server", []*answeredBy{by("a"), by("b")}, false},
		{"an answer that tells no server", []*answeredBy{by("a", ""), by("a")}, false},
		{"no answer", []*answeredBy{by(), by("a")}, false},
	} {
		if got := sameServer(tc.sets...); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
