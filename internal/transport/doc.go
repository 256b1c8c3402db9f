// Package transport carries the requests of the per-object passes to the
// API servers: spread over several connections of their own, so that
// behind a load balancer every server takes a share (SpreadClient), each
// answer told apart by the server that gave it (Server), and an object's
// requests kept to one server shown fit to take them (Route). It knows
// HTTP and client-go's rest.Config only; the clients built on it are
// package cluster's.
package transport
