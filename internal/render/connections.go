package render

import "fmt"

// Connections says how a command's requests over objects reach the API
// servers the kubernetes service lists: a load balancer sends each
// connection, not each request, to one of them.
func Connections(connections, servers int) string {
	switch {
	case servers == 1:
		return "the kubernetes service lists 1 API server address (a load balancer may stand behind it)"
	case connections <= 1:
		return fmt.Sprintf("the kubernetes service lists %d API servers: --one-connection sends every request over objects to one of them", servers)
	}
	return fmt.Sprintf("the kubernetes service lists %d API servers: requests over objects are spread over %d connections, which a load balancer sends to each of them", servers, connections)
}
