package transport

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// Server is one API server, told apart by its serving certificate.
type Server int64

// NoServer: no answer yet, or one that did not tell its server (plain HTTP).
const NoServer Server = -1

// ErrEveryServerAvoided: every connection reaches a server the route avoids.
var ErrEveryServerAvoided = errors.New("every API server the connections reach is avoided")

// ErrNoRoutes: the clients were not built by NewClients and keep no routes.
var ErrNoRoutes = errors.New("the clients keep no route to an API server")

// ErrNewConnection: the request would open a connection, which may reach any server.
var ErrNewConnection = errors.New("the request would open a new connection to the API server")

// Route keeps its requests (WithRoute) on one connection so an object's check and write
// reach one API server. A route that avoids servers never opens a connection.
type Route struct {
	avoid func(Server) bool
	// on is the connection kept to (-1: the one pick chooses).
	on int

	mu    sync.Mutex
	lane  *lane
	saw   []Server
	last  Server
	blind bool
}

// NewRoute is a route that avoids the servers avoid names (nil: none).
func NewRoute(avoid func(Server) bool) *Route { return &Route{avoid: avoid, on: -1, last: NoServer} }

// Probe is a route along r's connection that may reopen it, to ask which server it reaches.
func (r *Route) Probe() *Route {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &Route{on: -1, lane: r.lane, last: NoServer}
}

// RouteOn is a route along the i-th connection, to ask each server before a pass.
func RouteOn(i int) *Route { return &Route{on: i, last: NoServer} }

// routeKey carries a route in the context: client-go hands a transport nothing else.
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

// Answered are the servers that answered the route, and whether an answer did not tell.
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
