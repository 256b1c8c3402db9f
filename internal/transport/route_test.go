package transport

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"
)

// A route that avoids servers never opens a connection: a new one may
// reach another server than the one its connection was picked for. A
// probe does, and the connection's server is known from its answer.
func TestARouteThatAvoidsServersOpensNoConnection(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	rt, err := spreadTransport(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	s := rt.(*spread)
	get := func(route *Route) error {
		req, err := http.NewRequestWithContext(WithRoute(context.Background(), route), http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := s.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	anyServer := func(Server) bool { return false }
	if err := get(NewRoute(anyServer)); !errors.Is(err, ErrEveryServerAvoided) {
		t.Fatalf("before any connection answered: %v, want ErrEveryServerAvoided (no connection's server is known)", err)
	}
	probe := RouteOn(0)
	if err := get(probe); err != nil {
		t.Fatal(err)
	}
	if probe.Last() == NoServer {
		t.Fatal("the probe's answer told no server")
	}
	route := NewRoute(anyServer)
	if err := get(route); err != nil {
		t.Fatalf("along the probed connection: %v", err)
	}
	if got, blind := route.Answered(); blind || len(got) != 1 || got[0] != probe.Last() {
		t.Errorf("answered by %v (blind %v), want %v", got, blind, probe.Last())
	}
	s.CloseIdleConnections()
	s.lanes[0].server.Store(int64(probe.Last())) // as if the connection had died unseen
	if err := get(NewRoute(anyServer)); !errors.Is(err, ErrNewConnection) {
		t.Errorf("with the connection gone: %v, want ErrNewConnection", err)
	}
}
