// Package transport spreads the per-object passes' requests over connections of
// their own, so every API server behind a load balancer takes a share (SpreadClient),
// tells answers apart by server (Server) and keeps an object's requests on one (Route).
package transport
