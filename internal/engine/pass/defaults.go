package pass

import "time"

const (
	// DefaultConcurrency bounds the requests in flight; the pass adapts below it. 256 fills a
	// 150 ms path to a server that answers 1,700 requests a second.
	DefaultConcurrency = 256
	// MaxConcurrency bounds Concurrency, past what any server measured here used.
	MaxConcurrency = 1024
	// DefaultPageSize is objects listed per request, metadata only.
	DefaultPageSize = 500
	// DefaultRetryFor bounds how long one write is retried while the server is busy or restarting.
	DefaultRetryFor = 30 * time.Second
)
