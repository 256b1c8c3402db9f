package sandbox

import (
	"context"
	"errors"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// ServerOptions tune an API server added to a sandbox.
type ServerOptions struct {
	// Late puts a WatchHold between the server and etcd, so the test can
	// make it learn of CRD changes after the other servers do.
	Late bool
}

// Server is an API server added to a sandbox next to its main one: the
// servers of an HA control plane, on one etcd.
type Server struct {
	// WatchHold is the server's etcd endpoint if it is Late, else nil.
	WatchHold *WatchHold

	api      *apiServer
	stopOnce sync.Once
	stopErr  error
}

// AddAPIServer starts another API server on the sandbox's etcd, with an
// address and serving certificate of its own and the main server's token.
// The sandbox stops it when it stops.
func (s *Sandbox) AddAPIServer(ctx context.Context, opts ServerOptions) (*Server, error) {
	id, err := s.id.sibling(s.dir)
	if err != nil {
		return nil, err
	}
	srv, endpoint := &Server{}, s.etcd.endpoint
	if opts.Late {
		if srv.WatchHold, err = NewWatchHold(endpoint); err != nil {
			return nil, err
		}
		endpoint = srv.WatchHold.Endpoint()
	}
	// The certificate directory is the server's own: its scratch files go
	// there, not where another server writes at the same time.
	if srv.api, err = startAPIServer(ctx, id.certDir, endpoint, id, s.opts); err != nil {
		if srv.WatchHold != nil {
			srv.WatchHold.Stop()
		}
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.Join(errors.New("sandbox stopped"), srv.Stop())
	}
	s.added = append(s.added, srv)
	return srv, nil
}

// AddAPIServerT adds an API server for a test and stops it when the test
// ends.
func (s *Sandbox) AddAPIServerT(t testing.TB, opts ServerOptions) *Server {
	t.Helper()
	srv, err := s.AddAPIServer(t.Context(), opts)
	if err != nil {
		t.Fatalf("adding an API server: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stopping an added API server: %v", err)
		}
	})
	return srv
}

// RestConfig returns a copy of the server's client config: its own
// address and certificate, the sandbox's token.
func (srv *Server) RestConfig() *rest.Config { return rest.CopyConfig(srv.api.config) }

// Stop stops the server, then its WatchHold. It is safe to call more than
// once.
func (srv *Server) Stop() error {
	srv.stopOnce.Do(func() {
		srv.stopErr = srv.api.stop()
		if srv.WatchHold != nil {
			srv.WatchHold.Stop()
		}
	})
	return srv.stopErr
}
