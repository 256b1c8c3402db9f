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

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/transport"
)

// requestTimeout bounds one attempt of a request, beyond the 60 s the API
// server may hold a request (queued by priority and fairness, say): one
// that hangs longer is retried.
const requestTimeout = 90 * time.Second

// throttlePause is how long a throttled request waits before it asks for a
// slot again.
const throttlePause = 100 * time.Millisecond

// maxThrottled is how long one request may be throttled (429) before it is
// given up as failed.
const maxThrottled = 10 * time.Minute

// Unreachable wraps an error that outlasted the retry budget: the server
// is gone, not the object at fault, so a pass stops rather than fail every
// object left.
type Unreachable struct{ Err error }

func (u Unreachable) Error() string { return "the API server did not answer: " + u.Err.Error() }
func (u Unreachable) Unwrap() error { return u.Err }

// Attempt runs one request of the pass until it is answered; cancelling
// ctx abandons it. Transient errors (the server busy or restarting) are
// retried with bounded backoff, past which the error is Unreachable; a 429
// the server's throttling sent is retried for as long as it keeps
// answering it, each retry waiting for room under the limit the 429
// lowered. Any other answer, error or not, is the caller's.
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
			// The server throttles (priority and fairness may hold a user to
			// one seat for long): it is there and asks for fewer requests.
			// It is waited for, never taken for unreachable, and the retry
			// waits for room under the limit the 429 lowered rather than
			// keep the slot of a pass that has too many; only a request
			// throttled for maxThrottled is given up, as failed. The lowered
			// limit paces the retries: no backoff of its own.
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
			// A 429 the server's throttling did not send (no Retry-After):
			// an admission denial with that code, about this object.
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

// IsConversionFailure tells a failing conversion webhook: the API server
// answers 500 with the webhook named in the message.
func IsConversionFailure(err error) bool {
	return err != nil && strings.Contains(err.Error(), "conversion webhook")
}

// IsConversionRefusal tells a conversion webhook that answered, and
// answered no: the API server passes on the failure its ConversionReview
// carried. Not a refusal: a webhook the API server could not call or whose
// answer it could not read; the call's own error then follows "failed: "
// (an address, a connection, TLS, a timeout, an HTTP status, a malformed
// review).
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

// callFailures are words of the API server's own errors in calling a
// conversion webhook, never of a webhook's answer.
var callFailures = []string{`Post "`, "connection refused", "no such host", "x509:", "tls:", "i/o timeout", "deadline exceeded",
	"EOF", "the server ", "an error on the server", "no response provided", "expected response.uid", "expected webhook response"}

// IsTransient tells errors worth retrying: the server is busy, restarting
// or unreachable for a moment. A conversion failure is not retried: a
// failing webhook must stop the writing, not be hammered. Nor is any other
// 500: it is about the object (too large for etcd, say) and would fail
// again.
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
