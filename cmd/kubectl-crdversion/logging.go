package main

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// withQuietCancel gives ctx a logger that drops what client-go logs as an
// error when a request is cancelled ("Unexpected error when reading
// response body" err="context canceled"): after Ctrl-C that is the
// interrupt the user asked for, and the command itself says what it
// stopped. client-go logs through klog.FromContext, so every request made
// under ctx gets it; every other line goes to klog as before.
func withQuietCancel(ctx context.Context) context.Context {
	logger := klog.Background()
	return klog.NewContext(ctx, logger.WithSink(newQuietCancel(logger.GetSink())))
}

// quietCancel passes everything on but an error that is a cancellation.
// Its Error is one frame more than the sink's: errSink skips it, so the
// line keeps its caller's file:line.
type quietCancel struct {
	logr.LogSink
	errSink logr.LogSink
}

func newQuietCancel(sink logr.LogSink) quietCancel {
	q := quietCancel{LogSink: sink, errSink: sink}
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		q.errSink = cd.WithCallDepth(1)
	}
	return q
}

func (q quietCancel) Error(err error, msg string, kv ...any) {
	if errors.Is(err, context.Canceled) {
		return
	}
	q.errSink.Error(err, msg, kv...)
}

func (q quietCancel) WithValues(kv ...any) logr.LogSink {
	return newQuietCancel(q.LogSink.WithValues(kv...))
}

func (q quietCancel) WithName(name string) logr.LogSink {
	return newQuietCancel(q.LogSink.WithName(name))
}
