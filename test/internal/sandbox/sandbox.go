package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/rest"
)

// Options tune a sandbox.
type Options struct {
	// DisableWatchCache makes paged LISTs read etcd directly, so a continue
	// token expires (410) once etcd is compacted past it, as on a big cluster.
	DisableWatchCache bool
	// WatchCacheSizes is kube-apiserver's --watch-cache-sizes, for every
	// server of the sandbox: "customresourcedefinitions.apiextensions.k8s.io#0"
	// turns the CRDs' cache off, so a GET at resourceVersion=0 reads etcd.
	WatchCacheSizes []string
	// Dir is the working directory; empty means a temp dir Stop removes.
	Dir string
}

// Sandbox is one etcd and the API server in front of it.
type Sandbox struct {
	Store
	opts       Options
	dir        string
	ownDir     bool
	kubeconfig string
	etcd       *Etcd
	id         *identity

	mu     sync.Mutex
	api    *apiServer
	added  []*Server // by AddAPIServer
	closed bool
}

// Start starts etcd and the API server and writes a kubeconfig for them.
func Start(ctx context.Context, opts Options) (*Sandbox, error) {
	s := &Sandbox{opts: opts, dir: opts.Dir}
	if s.dir == "" {
		dir, err := os.MkdirTemp("", "crdversion-sandbox-")
		if err != nil {
			return nil, err
		}
		s.dir, s.ownDir = dir, true
	}
	s.kubeconfig = filepath.Join(s.dir, "kubeconfig")
	var err error
	if s.id, err = newIdentity(s.dir); err != nil {
		s.removeDir()
		return nil, err
	}
	if s.etcd, err = StartEtcd(ctx, s.dir); err != nil {
		s.removeDir()
		return nil, err
	}
	s.Store = Store{s.etcd.client}
	if err := s.StartAPIServer(ctx); err != nil {
		s.etcd.Stop()
		s.removeDir()
		return nil, err
	}
	return s, nil
}

// StartT starts a sandbox for a test and stops it when the test ends.
func StartT(t testing.TB, opts Options) *Sandbox {
	t.Helper()
	s, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("starting sandbox: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping sandbox: %v", err)
		}
	})
	return s
}

// RestConfig returns a copy of the client config of the running API server;
// QPS and Burst are left for the caller to choose.
func (s *Sandbox) RestConfig() *rest.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return rest.CopyConfig(s.api.config)
}

// KubeconfigPath is a kubeconfig for the running API server, rewritten in
// place when it restarts.
func (s *Sandbox) KubeconfigPath() string { return s.kubeconfig }

// Etcd is a client of the sandbox's etcd.
func (s *Sandbox) Etcd() *clientv3.Client { return s.etcd.client }

// StartAPIServer starts an API server on the running etcd, at the address
// and with the certificate and token of the one before it, if any.
func (s *Sandbox) StartAPIServer(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.api != nil {
		return errors.New("API server already running")
	}
	api, err := startAPIServer(ctx, s.dir, s.etcd.endpoint, s.id, s.opts)
	if err != nil {
		return err
	}
	if err := WriteKubeconfig(s.kubeconfig, api.config); err != nil {
		_ = api.stop()
		return err
	}
	s.api = api
	return nil
}

// StopAPIServer stops the API server and leaves etcd running.
func (s *Sandbox) StopAPIServer() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.api == nil {
		return nil
	}
	err := s.api.stop()
	s.api = nil
	return err
}

// RestartAPIServer replaces the API server with a new one on the same etcd
// and address: clients of the old one go on with the new one.
func (s *Sandbox) RestartAPIServer(ctx context.Context) error {
	if err := s.StopAPIServer(); err != nil {
		return err
	}
	return s.StartAPIServer(ctx)
}

// Stop stops the API servers and etcd and removes the temp dir. It is safe
// to call more than once.
func (s *Sandbox) Stop() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	added := s.added
	s.mu.Unlock()
	var errs []error
	for _, srv := range added {
		errs = append(errs, srv.Stop())
	}
	err := errors.Join(append(errs, s.StopAPIServer())...)
	s.etcd.Stop()
	s.removeDir()
	return err
}

func (s *Sandbox) removeDir() {
	if s.ownDir {
		_ = os.RemoveAll(s.dir)
	}
}
