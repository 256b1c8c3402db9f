package transport

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// DefaultConnections is how many connections the per-object passes spread
// their requests over. client-go sends every request of a client over one
// HTTP/2 connection, and a load balancer in front of several API servers
// balances connections, not requests: one connection puts a whole pass on
// one server. Eight connections reach every one of two to eight servers
// behind a round-robin balancer, and every one of three behind a random
// one nine times in ten.
const DefaultConnections = 8

// streamsPerConnection is kube-apiserver's default limit of requests in
// flight on one HTTP/2 connection (--http2-max-streams-per-connection):
// past it Go's transport would quietly open another connection, which a
// load balancer may send to another server. A connection here never has
// more: the requests past it wait, or go to another connection.
const streamsPerConnection = 100

// spread is a RoundTripper over several connections. A request goes to the
// API server with the fewest requests outstanding, and there to its
// connection with the fewest; the first among equals, so one request at a
// time keeps to one connection and only requests in parallel open more.
// Which server a connection reached shows in its serving certificate;
// until its first answer, and where servers share one certificate, each
// connection counts as a server of its own. A server that slows down keeps
// its requests longer, so it gets fewer new ones: its share backs off, the
// others' does not.
type spread struct {
	lanes []*lane
	// freed wakes a request waiting for room on a connection.
	freed chan struct{}

	mu      sync.Mutex
	servers map[[sha256.Size]byte]Server
	// byCert spares a hash for each answer: a connection's certificate is
	// parsed once, at its handshake.
	byCert map[*x509.Certificate]Server
}

// maxServers bounds the servers told apart (certificates rotate): an
// answer from one past it tells no server.
const maxServers = 64

type lane struct {
	rt          http.RoundTripper
	outstanding atomic.Int64
	// server is the server the connection last answered from, or -1 until
	// its first answer and from each new connection on until its answer.
	server atomic.Int64
}

// spreadTransport is a RoundTripper for cfg over n connections of their
// own, each with cfg's authentication, TLS verification and wrappers.
func spreadTransport(cfg *rest.Config, n int) (http.RoundTripper, error) {
	s := &spread{freed: make(chan struct{}, 1), servers: map[[sha256.Size]byte]Server{}, byCert: map[*x509.Certificate]Server{}}
	for range max(n, 1) {
		l := &lane{}
		l.server.Store(-1)
		c := rest.CopyConfig(cfg)
		c.Dial = l.ownDial(cfg.Dial)
		rt, err := rest.TransportFor(c)
		if err != nil {
			return nil, err
		}
		l.rt = rt
		s.lanes = append(s.lanes, l)
	}
	return s, nil
}

// ownDial is a dial func of its own: client-go shares one cached
// transport, and so one connection, between configs that do not set one.
// A new connection may reach another server than the lane did: until it
// answers, the lane's server is unknown, and a route that avoids servers
// neither opens one nor picks the lane.
func (l *lane) ownDial(dial func(ctx context.Context, network, address string) (net.Conn, error)) func(ctx context.Context, network, address string) (net.Conn, error) {
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if r, ok := ctx.Value(routeKey{}).(*Route); ok && r.avoid != nil {
			// Nothing is sent: the caller asks the server anew.
			return nil, ErrNewConnection
		}
		conn, err := dial(ctx, network, address)
		if err == nil {
			l.server.Store(-1)
		}
		return conn, err
	}
}

func (s *spread) RoundTrip(r *http.Request) (*http.Response, error) {
	route, _ := r.Context().Value(routeKey{}).(*Route)
	l, err := s.takeFor(r.Context(), route)
	if err != nil {
		return nil, err
	}
	resp, err := l.rt.RoundTrip(r)
	if err != nil {
		s.release(l)
		return resp, err
	}
	if srv := s.saw(l, resp); route != nil {
		route.answered(srv)
	}
	// A request is outstanding until its answer is read: a slow server
	// may send headers at once and the body late.
	resp.Body = &doneBody{ReadCloser: resp.Body, done: func() { s.release(l) }}
	return resp, nil
}

// takeFor reserves room for one request on the connection pick chooses,
// or the one its route keeps to, waiting while it is full (every one, for
// pick). A route's first request picks among the connections whose server
// it does not avoid, and fails with ErrEveryServerAvoided where there is
// none.
func (s *spread) takeFor(ctx context.Context, route *Route) (*lane, error) {
	for {
		l, avoided := s.pickFor(route)
		switch {
		case l != nil:
			return l, nil
		case avoided:
			return nil, ErrEveryServerAvoided
		}
		select {
		case <-s.freed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (s *spread) release(l *lane) {
	l.outstanding.Add(-1)
	select {
	case s.freed <- struct{}{}:
	default:
	}
}

// pickFor reserves a slot for a request of route (nil: of none): on the
// connection route keeps to, or on the one pick chooses among those whose
// server route does not avoid, which route keeps to from then on. avoided
// says every connection reaches a server route avoids.
func (s *spread) pickFor(route *Route) (l *lane, avoided bool) {
	if route == nil {
		return s.pick(nil), false
	}
	route.mu.Lock()
	defer route.mu.Unlock()
	if route.lane == nil && route.on >= 0 {
		route.lane = s.lanes[route.on%len(s.lanes)]
	}
	if route.lane != nil {
		return s.reserve(route.lane), false
	}
	skip := func(l *lane) bool {
		id := l.server.Load()
		return route.avoid != nil && (id < 0 || route.avoid(Server(id)))
	}
	if !slices.ContainsFunc(s.lanes, func(l *lane) bool { return !skip(l) }) {
		return nil, true
	}
	if l = s.pick(skip); l != nil {
		route.lane = l
	}
	return l, false
}

// reserve takes a slot on l; nil when it is full.
func (s *spread) reserve(l *lane) *lane {
	if l.outstanding.Add(1) > streamsPerConnection {
		// No wake-up: the requests that fill it will send theirs.
		l.outstanding.Add(-1)
		return nil
	}
	return l
}

// pick reserves a slot on the connection with room of the server with the
// fewest requests outstanding, passing over those skip names; nil when
// every other connection is full.
func (s *spread) pick(skip func(*lane) bool) *lane {
	// Servers by index, then each connection not known yet as its own.
	load := make([]int64, maxServers+len(s.lanes))
	server := func(i int, l *lane) int {
		if id := l.server.Load(); id >= 0 {
			return int(id)
		}
		return maxServers + i
	}
	for i, l := range s.lanes {
		load[server(i, l)] += l.outstanding.Load()
	}
	var best *lane
	var bestServer, bestLane int64
	for i, l := range s.lanes {
		out := l.outstanding.Load()
		if out >= streamsPerConnection || (skip != nil && skip(l)) {
			continue
		}
		if srv := load[server(i, l)]; best == nil || srv < bestServer || (srv == bestServer && out < bestLane) {
			best, bestServer, bestLane = l, srv, out
		}
	}
	if best == nil {
		return nil
	}
	return s.reserve(best)
}

// saw notes which server the connection answered from, by the serving
// certificate of this answer, and returns it: NoServer where the answer
// does not tell.
func (s *spread) saw(l *lane, resp *http.Response) Server {
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		return NoServer
	}
	id := s.serverOf(resp.TLS.PeerCertificates[0])
	l.server.Store(int64(id))
	return id
}

func (s *spread) serverOf(cert *x509.Certificate) Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.byCert[cert]; ok {
		return id
	}
	sum := sha256.Sum256(cert.Raw)
	id, ok := s.servers[sum]
	if !ok {
		if len(s.servers) >= maxServers {
			return NoServer
		}
		id = Server(len(s.servers))
		s.servers[sum] = id
	}
	s.byCert[cert] = id
	return id
}

// CloseIdleConnections closes every connection's idle ones.
func (s *spread) CloseIdleConnections() {
	for _, l := range s.lanes {
		utilnet.CloseIdleConnectionsFor(l.rt)
	}
}

type doneBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *doneBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

// SpreadClient is an HTTP client whose requests are spread over n
// connections of their own. A client-side rate limit cfg sets stays each
// client's, above the connections: n do not multiply it.
func SpreadClient(cfg *rest.Config, n int) (*http.Client, error) {
	rt, err := spreadTransport(cfg, n)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: rt, Timeout: cfg.Timeout}, nil
}
