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

// FieldManager is the name the plugin's writes are recorded under in
// managedFields.
const FieldManager = "kubectl-crdversion"

// Clients are the plugin's connection to one cluster: every client a
// command or a migration needs, built once (NewClients).
type Clients struct {
	CRDs      apiextensionsclient.Interface
	Dynamic   dynamic.Interface
	Metadata  metadata.Interface
	Discovery discovery.DiscoveryInterface
	// FreshDiscovery, when set, gives a discovery client on connections of
	// its own and a func that closes them: each read of the storage switch
	// may then reach another API server behind a load balancer.
	FreshDiscovery func() (discovery.DiscoveryInterface, func(), error)
	// Access, when set, asks the API server (SelfSubjectAccessReview)
	// before anything is written whether the user may do it all.
	Access authorizationclient.SelfSubjectAccessReviewsGetter
	// Migrations, when set, creates and follows the cluster's own
	// StorageVersionMigrations (MigrateViaCluster).
	Migrations svmclient.StoragemigrationV1Interface

	// Connections is how many connections Dynamic and Metadata spread
	// their requests over.
	Connections int

	// throttles counts 429 answers (NewClients counts them), for a pass's
	// adaptive limit.
	throttles *atomic.Int64
	// objectsREST reaches the API server on the objects' connections,
	// for what a Route asks the server behind it (StorageVersionHash).
	objectsREST rest.Interface
}

// Throttled is how many answers were 429s carrying Retry-After since the
// clients were built (0 for clients NewClients did not build).
func (c Clients) Throttled() int64 {
	if c.throttles == nil {
		return 0
	}
	return c.throttles.Load()
}

// NewClients builds every client a migration needs from one config, the
// objects' clients spread over transport.DefaultConnections (NewClientsOver).
func NewClients(cfg *rest.Config) (Clients, error) {
	return NewClientsOver(cfg, transport.DefaultConnections)
}

// NewClientsOver builds every client a migration needs from one config,
// the objects' clients (Dynamic and Metadata, what the per-object passes
// send) spread over n connections of their own: behind a load balancer,
// a pass reaches every API server (1: one connection, one server). A
// config that sets no client-side rate limit (QPS 0, no RateLimiter), as
// rest.InClusterConfig and kubeconfigs give, gets none: client-go would
// read it as 5 requests a second, and a migration would run at 5 objects
// a second. The pass's adaptive limit and the API server's priority and
// fairness (its 429s) set the pace then. A QPS or RateLimiter set is kept
// (shared by all n connections).
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
	// The passes read and dry-run objects at a deprecated version on
	// purpose (the old→new→old proof can only be made there): the API
	// server's warning on each of those requests is the plugin's own doing,
	// not the user's, and the passes report what they found themselves.
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

// uncapped is a copy of cfg with no client-side rate limit unless cfg sets
// one; client-go reads a negative QPS as none.
func uncapped(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS = -1
	}
	return cfg
}

// freshDiscovery gives discovery clients that each open connections of
// their own: a Dial func of its own keeps client-go from handing out its
// cached, shared transport.
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

// countThrottles counts the 429 answers by which the server throttles (they
// carry Retry-After; an admission denial with that code does not). A write
// that carries a throttle mark (WithThrottleMark: a pass's per-object
// write) is marked throttled, and its Retry-After is dropped so client-go
// hands the 429 back instead of retrying it in the same slot: the pass
// retries it once there is room under the limit the 429 lowered, rather
// than a burst of writers all retrying together a second later, into the
// same throttle. Every other request keeps client-go's own retry.
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

// throttleMarkKey carries a mark to the round tripper in the request's
// context: client-go hands a transport nothing else of the caller's.
type throttleMarkKey struct{}

// ThrottleMark says whether the server throttled the request.
type ThrottleMark struct{ throttled atomic.Bool }

// Throttled says whether the server throttled a request sent with the
// mark's context.
func (m *ThrottleMark) Throttled() bool { return m.throttled.Load() }

// WithThrottleMark marks the requests sent with ctx as a pass's writes.
func WithThrottleMark(ctx context.Context) (context.Context, *ThrottleMark) {
	m := &ThrottleMark{}
	return context.WithValue(ctx, throttleMarkKey{}, m), m
}
