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

// DefaultConnections is how many connections a pass spreads over: client-go sends a
// client's requests over one HTTP/2 connection and load balancers balance connections,
// not requests. Eight reach each of two to eight servers behind a round-robin balancer.
const DefaultConnections = 8

// streamsPerConnection is kube-apiserver's default --http2-max-streams-per-connection:
// past it Go would quietly open another connection, which may reach another server.
const streamsPerConnection = 100

// spread sends a request to the server with the fewest outstanding (a slow one gets fewer),
// first among equals so serial requests keep to one connection.
type spread struct {
	lanes []*lane
	freed chan struct{}

	mu      sync.Mutex
	servers map[[sha256.Size]byte]Server
	// byCert spares a hash per answer: a connection's certificate is parsed once.
	byCert map[*x509.Certificate]Server
}

// maxServers bounds the servers told apart (certificates rotate).
const maxServers = 64

type lane struct {
	rt          http.RoundTripper
	outstanding atomic.Int64
	// server is the one last answered from; -1 until a new connection answers.
	server atomic.Int64
}

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

// ownDial is the lane's own dial func: client-go shares one cached transport between
// configs without one. A route that avoids servers opens no connection.
func (l *lane) ownDial(dial func(ctx context.Context, network, address string) (net.Conn, error)) func(ctx context.Context, network, address string) (net.Conn, error) {
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if r, ok := ctx.Value(routeKey{}).(*Route); ok && r.avoid != nil {
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
	// Outstanding until the body is closed: a slow server may send it late.
	resp.Body = &doneBody{ReadCloser: resp.Body, done: func() { s.release(l) }}
	return resp, nil
}

// takeFor reserves room as pickFor does, waiting while the connections are full.
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

// pickFor reserves a slot on route's connection, or picks one whose server route does
// not avoid and keeps to it; avoided says every connection reaches an avoided server.
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

func (s *spread) reserve(l *lane) *lane {
	if l.outstanding.Add(1) > streamsPerConnection {
		// No wake-up: the requests that fill it will send theirs.
		l.outstanding.Add(-1)
		return nil
	}
	return l
}

// pick reserves a slot on the least-loaded server's connection; nil when all are full.
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

// saw notes and returns the server the answer's certificate tells, or NoServer.
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

// SpreadClient is an HTTP client over n connections of its own; n does not multiply the rate limit.
func SpreadClient(cfg *rest.Config, n int) (*http.Client, error) {
	rt, err := spreadTransport(cfg, n)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: rt, Timeout: cfg.Timeout}, nil
}
