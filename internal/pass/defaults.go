package pass

import "time"

// The defaults of every pass over objects: the packages that run passes
// (migrate, verify) name them for their callers.
const (
	// DefaultConcurrency bounds the requests a pass keeps in flight; the
	// pass adapts below it. 256 fills a 150 ms path to a server that
	// answers 1,700 requests a second.
	DefaultConcurrency = 256
	// MaxConcurrency bounds Concurrency: four times the default, past what
	// any server measured here took with more throughput.
	MaxConcurrency = 1024
	// DefaultPageSize is objects listed per request, metadata only.
	DefaultPageSize = 500
	// DefaultRetryFor bounds how long one write is retried while the server
	// is busy or restarting.
	DefaultRetryFor = 30 * time.Second
)
