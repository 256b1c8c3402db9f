package pass

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/transport"
)

// requestTimeout bounds one attempt, past the 60 s the API server may hold a request.
const requestTimeout = 90 * time.Second

// throttlePause is how long a throttled request waits before asking for a slot again.
const throttlePause = 100 * time.Millisecond

// maxThrottled is how long one request may be throttled (429) before it fails.
const maxThrottled = 10 * time.Minute

// Unreachable wraps an error past the retry budget: the server is gone, so the pass stops.
type Unreachable struct{ Err error }

func (u Unreachable) Error() string { return "the API server did not answer: " + u.Err.Error() }
func (u Unreachable) Unwrap() error { return u.Err }

// Attempt runs one request until it is answered; cancelling ctx abandons it. Transient errors are
// retried with bounded backoff, then Unreachable; a throttling 429, under the limit it lowered.
func (p *Pass) Attempt(ctx context.Context, request func(context.Context) error) error {
	deadline := time.Now().Add(p.opts.RetryFor)
	delay := 100 * time.Millisecond
	var throttledSince time.Time
	for {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		rctx, mark := cluster.WithThrottleMark(rctx)
		p.sent.Add(1)
		err := request(rctx)
		cancel()
		switch {
		case err == nil:
			return nil
		case mark.Throttled():
			// The server is there and asks for fewer requests: wait for room under the limit the 429
			// lowered (which paces the retries), and give up only after maxThrottled.
			if throttledSince.IsZero() {
				throttledSince = time.Now()
			} else if time.Since(throttledSince) > maxThrottled {
				return fmt.Errorf("throttled for %s: %w", maxThrottled, err)
			}
			deadline = time.Now().Add(p.opts.RetryFor)
			if !p.gate.pause(ctx, wait.Jitter(throttlePause, 0.5)) {
				return ctx.Err()
			}
			continue
		case apierrors.IsTooManyRequests(err):
			// A 429 not sent by throttling (no Retry-After): an admission denial about this object.
			return err
		case !IsTransient(err):
			return err
		case time.Now().Add(delay).After(deadline):
			return Unreachable{err}
		}
		select {
		case <-time.After(wait.Jitter(delay, 0.2)):
		case <-ctx.Done():
			return ctx.Err()
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// IsConversionFailure tells a failing conversion webhook: the API server answers 500 naming it.
func IsConversionFailure(err error) bool {
	return err != nil && strings.Contains(err.Error(), "conversion webhook")
}

// IsConversionRefusal tells a conversion webhook that answered no from one the API server could
// not call or read (its error then follows "failed: ").
func IsConversionRefusal(err error) bool {
	if !IsConversionFailure(err) {
		return false
	}
	_, why, ok := strings.Cut(err.Error(), " failed: ")
	if !ok {
		return false
	}
	for _, call := range callFailures {
		if strings.Contains(why, call) {
			return false
		}
	}
	return true
}

// callFailures are words of the API server's errors calling a webhook, never of its answer.
var callFailures = []string{`Post "`, "connection refused", "no such host", "x509:", "tls:", "i/o timeout", "deadline exceeded",
	"EOF", "the server ", "an error on the server", "no response provided", "expected response.uid", "expected webhook response"}

// IsTransient tells errors worth retrying: the server busy, restarting or briefly unreachable;
// not a failing conversion webhook (do not hammer it) nor another 500 (about the object).
func IsTransient(err error) bool {
	if err == nil || IsConversionFailure(err) || errors.Is(err, transport.ErrNewConnection) || errors.Is(err, transport.ErrEveryServerAvoided) {
		return false
	}
	if apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsServiceUnavailable(err) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "connection reset") || strings.Contains(msg, "EOF")
}
