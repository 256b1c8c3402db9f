package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Etcd is a single-member etcd on loopback.
type Etcd struct {
	server   *embed.Etcd
	client   *clientv3.Client
	endpoint string
}

// StartEtcd starts a single-member etcd on loopback with fsync off: the data
// is throw-away, and fsync would dominate test time. etcd binds ports it is
// given, not listeners, so a port found free can be taken by another
// process (a parallel test binary) before etcd binds it: then it starts
// again on other ports.
func StartEtcd(ctx context.Context, dir string) (*Etcd, error) {
	for attempt := 1; ; attempt++ {
		e, err := startEtcdOnce(ctx, dir)
		if err == nil || attempt == 5 || !strings.Contains(err.Error(), "address already in use") {
			return e, err
		}
		if err := os.RemoveAll(filepath.Join(dir, "etcd")); err != nil {
			return nil, err
		}
	}
}

func startEtcdOnce(ctx context.Context, dir string) (*Etcd, error) {
	peer, err := freeLocalURL("http")
	if err != nil {
		return nil, err
	}
	client, err := freeLocalURL("http")
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "sandbox"
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.UnsafeNoFsync = true
	// etcd's default quota of 2 GiB would stop a run of a million objects,
	// whose every re-store is another revision until the API server
	// compacts.
	cfg.QuotaBackendBytes = 8 << 30
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logger())

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return nil, errors.New("etcd did not become ready in 30s")
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{client.String()}, DialTimeout: 10 * time.Second, Logger: logger()})
	if err != nil {
		e.Close()
		return nil, err
	}
	return &Etcd{server: e, client: c, endpoint: client.String()}, nil
}

// Endpoint is the client URL, for API servers in other processes.
func (e *Etcd) Endpoint() string { return e.endpoint }

// Client is a client of this etcd.
func (e *Etcd) Client() *clientv3.Client { return e.client }

// Stop stops etcd and waits for it.
func (e *Etcd) Stop() {
	_ = e.client.Close()
	e.server.Close()
	<-e.server.Server.StopNotify()
}

func logger() *zap.Logger {
	if verbose() {
		l, _ := zap.NewDevelopment()
		return l
	}
	return zap.NewNop()
}
