package cluster

import (
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

func TestUncapped(t *testing.T) {
	limiter := flowcontrol.NewFakeAlwaysRateLimiter()
	for _, tc := range []struct {
		name    string
		cfg     rest.Config
		wantQPS float32
	}{
		// client-go would read 0 as 5 a second: a migration at 5 objects/s.
		{"no limit set, as rest.InClusterConfig gives", rest.Config{}, -1},
		{"a QPS set is kept", rest.Config{QPS: 50, Burst: 100}, 50},
		{"no limit asked for", rest.Config{QPS: -1}, -1},
		{"a rate limiter of the caller's is kept", rest.Config{RateLimiter: limiter}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.cfg
			got := uncapped(&in)
			if got.QPS != tc.wantQPS {
				t.Errorf("QPS = %v, want %v", got.QPS, tc.wantQPS)
			}
			if got.Burst != tc.cfg.Burst || got.RateLimiter != tc.cfg.RateLimiter {
				t.Errorf("Burst/RateLimiter changed: %v/%v", got.Burst, got.RateLimiter)
			}
			if in.QPS != tc.cfg.QPS {
				t.Errorf("the caller's config was changed: QPS %v", in.QPS)
			}
		})
	}
}
