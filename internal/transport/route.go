package transport

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// Server is one API server as the objects' connections tell them apart:
// by the serving certificate it answered with. Servers that share one
// certificate are one Server here.
type Server int64

// NoServer: no answer yet, or one that did not tell (plain HTTP, clients
// not built by NewClients).
const NoServer Server = -1

// ErrEveryServerAvoided: every connection of the objects' clients reaches
// an API server the request's route avoids.
var ErrEveryServerAvoided = errors.New("every API server the connections reach is avoided")

// ErrNoRoutes: the clients were not built by NewClients, and send no
// request along a Route.
var ErrNoRoutes = errors.New("the clients keep no route to an API server")

// ErrNewConnection: a request of a route that avoids servers would have
// opened a new connection, which may reach any server: it was not sent.
var ErrNewConnection = errors.New("the request would open a new connection to the API server")

// Route keeps the requests sent with its context (WithRoute) on one
// connection of the objects' clients, so that an object's check and its
// write reach one API server, and says which servers answered them. A
// route that avoids servers picks, at its first request, a connection
// known to reach a server avoid does not name, and never opens one: a
// new connection may reach another server (ErrNewConnection).
type Route struct {
	avoid func(Server) bool
	// on, from 0, is the connection the route keeps to from its first
	// request (-1: the one pick chooses).
	on int

	mu    sync.Mutex
	lane  *lane
	saw   []Server
	last  Server
	blind bool
}

// NewRoute is a route that avoids the servers avoid names (nil: none).
func NewRoute(avoid func(Server) bool) *Route { return &Route{avoid: avoid, on: -1, last: NoServer} }

// Probe is a route along r's connection that may open it anew: to ask
// which server it reaches now.
func (r *Route) Probe() *Route {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &Route{on: -1, lane: r.lane, last: NoServer}
}

// RouteOn is a route along the i-th connection of the objects' clients
// (of Clients.Connections), to ask each server they reach before a pass.
func RouteOn(i int) *Route { return &Route{on: i, last: NoServer} }

// routeKey carries a route to the dialer in the request's context: client-go
// hands a transport nothing else of the caller's, as net/http/httptrace
// carries its hooks.
type routeKey struct{}

// WithRoute sends the requests of ctx along r.
func WithRoute(ctx context.Context, r *Route) context.Context {
	return context.WithValue(ctx, routeKey{}, r)
}

func (r *Route) answered(s Server) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = s
	if s == NoServer {
		r.blind = true
	} else if !slices.Contains(r.saw, s) {
		r.saw = append(r.saw, s)
	}
}

// Answered are the servers that answered the route's requests (one, but
// where a connection was opened anew in between; none where nothing was
// sent), and whether an answer did not tell its server.
func (r *Route) Answered() (servers []Server, blind bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.saw), r.blind
}

// Last is the server that answered the route's last request.
func (r *Route) Last() Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}
