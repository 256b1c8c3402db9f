package cluster

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	svmclient "k8s.io/client-go/kubernetes/typed/storagemigration/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/transport"
)

// FieldManager is the name the plugin's writes are recorded under in managedFields.
const FieldManager = "kubectl-crdversion"

// Clients are every client a command or migration needs for one cluster (NewClients).
type Clients struct {
	CRDs      apiextensionsclient.Interface
	Dynamic   dynamic.Interface
	Metadata  metadata.Interface
	Discovery discovery.DiscoveryInterface
	// FreshDiscovery gives a discovery client on connections of its own and a closer, so
	// each read of the storage switch may reach another API server behind a load balancer.
	FreshDiscovery func() (discovery.DiscoveryInterface, func(), error)
	// Access asks (SelfSubjectAccessReview) before anything is written whether the user may.
	Access authorizationclient.SelfSubjectAccessReviewsGetter
	// Migrations creates and follows the cluster's StorageVersionMigrations.
	Migrations svmclient.StoragemigrationV1Interface

	// Connections is how many connections Dynamic and Metadata spread over.
	Connections int

	// throttles counts 429 answers, for a pass's adaptive limit.
	throttles *atomic.Int64
	// objectsREST is on the objects' connections, for what a Route asks its server.
	objectsREST rest.Interface
}

// Throttled is how many answers were 429s with Retry-After since NewClients built them.
func (c Clients) Throttled() int64 {
	if c.throttles == nil {
		return 0
	}
	return c.throttles.Load()
}

// NewClients is NewClientsOver with transport.DefaultConnections.
func NewClients(cfg *rest.Config) (Clients, error) {
	return NewClientsOver(cfg, transport.DefaultConnections)
}

// NewClientsOver builds every client from one config, Dynamic and Metadata over n
// connections so a pass behind a load balancer reaches every API server. A config with no
// rate limit gets none (client-go would read QPS 0 as 5 a second): the pass's adaptive
// limit and the server's 429s set the pace. A limit set is kept, shared by all n.
func NewClientsOver(cfg *rest.Config, n int) (Clients, error) {
	c := Clients{throttles: &atomic.Int64{}, Connections: max(n, 1)}
	cfg = uncapped(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countThrottles{rt, c.throttles} })
	var err error
	if c.CRDs, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		return c, err
	}
	objects, err := transport.SpreadClient(cfg, c.Connections)
	if err != nil {
		return c, err
	}
	// The passes use deprecated versions on purpose (the old→new→old proof needs them):
	// the server's warnings are the plugin's doing, not the user's.
	quiet := rest.CopyConfig(cfg)
	quiet.WarningHandler = rest.NoWarnings{}
	if c.Dynamic, err = dynamic.NewForConfigAndClient(quiet, objects); err != nil {
		return c, err
	}
	if c.Metadata, err = metadata.NewForConfigAndClient(quiet, objects); err != nil {
		return c, err
	}
	objectsDiscovery, err := discovery.NewDiscoveryClientForConfigAndClient(quiet, objects)
	if err != nil {
		return c, err
	}
	c.objectsREST = objectsDiscovery.RESTClient()
	if c.Discovery, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
		return c, err
	}
	if c.Access, err = authorizationclient.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.Migrations, err = svmclient.NewForConfig(cfg); err != nil {
		return c, err
	}
	c.FreshDiscovery = freshDiscovery(cfg)
	return c, nil
}

// uncapped copies cfg with no client-side rate limit unless it sets one (negative QPS: none).
func uncapped(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS = -1
	}
	return cfg
}

// freshDiscovery gives discovery clients on connections of their own: a Dial func of its
// own keeps client-go from handing out its cached, shared transport.
func freshDiscovery(cfg *rest.Config) func() (discovery.DiscoveryInterface, func(), error) {
	return func() (discovery.DiscoveryInterface, func(), error) {
		c := rest.CopyConfig(cfg)
		c.Dial = (&net.Dialer{Timeout: 30 * time.Second}).DialContext
		hc, err := rest.HTTPClientFor(c)
		if err != nil {
			return nil, nil, err
		}
		d, err := discovery.NewDiscoveryClientForConfigAndClient(c, hc)
		if err != nil {
			return nil, nil, err
		}
		return d, hc.CloseIdleConnections, nil
	}
}

// countThrottles counts 429s with Retry-After (an admission denial with that code has none).
// On a marked write it drops Retry-After so client-go hands the 429 back: the pass retries
// once there is room under the lowered limit, not in a burst a second later into the same
// throttle. Other requests keep client-go's retry.
type countThrottles struct {
	next  http.RoundTripper
	count *atomic.Int64
}

func (c countThrottles) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		return resp, err
	}
	c.count.Add(1)
	if m, ok := r.Context().Value(throttleMarkKey{}).(*ThrottleMark); ok {
		m.throttled.Store(true)
		resp.Header.Del("Retry-After")
	}
	return resp, err
}

// WrappedRoundTripper lets client-go close the idle connections below.
func (c countThrottles) WrappedRoundTripper() http.RoundTripper { return c.next }

// throttleMarkKey carries a mark in the context: client-go hands a transport nothing else.
type throttleMarkKey struct{}

// ThrottleMark says whether the server throttled the request.
type ThrottleMark struct{ throttled atomic.Bool }

// Throttled says whether the server throttled a request sent with the mark's context.
func (m *ThrottleMark) Throttled() bool { return m.throttled.Load() }

// WithThrottleMark marks the requests sent with ctx as a pass's writes.
func WithThrottleMark(ctx context.Context) (context.Context, *ThrottleMark) {
	m := &ThrottleMark{}
	return context.WithValue(ctx, throttleMarkKey{}, m), m
}
