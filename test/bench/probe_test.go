package bench

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// probeEvery is the probe's rate: a steady client beside the migration,
// like a controller reading what it owns.
const probeEvery = 50 * time.Millisecond

// probe is another client of the API server: it GETs one object of another
// resource every probeEvery, straight to the server (no latency proxy), so
// its latency is what the server makes every other client wait.
type probe struct {
	get func(context.Context) error

	mu        sync.Mutex
	latencies []time.Duration
	cancel    context.CancelFunc
	done      chan struct{}
}

func startProbe(t *testing.T, cfg *rest.Config, tg *target) *probe {
	t.Helper()
	dyn, err := dynamic.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := keys(t.Context(), conn{meta: mustMeta(t, cfg)}, tg)
	if err != nil || len(objs) == 0 {
		t.Fatalf("probe target: %v", err)
	}
	o := objs[0]
	ri := dyn.Resource(schema.GroupVersionResource{Group: "bench.example.com", Version: "v1", Resource: tg.plural}).Namespace(o.Namespace)
	return &probe{get: func(ctx context.Context) error {
		_, err := ri.Get(ctx, o.Name, metav1.GetOptions{})
		return err
	}}
}

// start begins probing in the background.
func (p *probe) start() {
	ctx, cancel := context.WithCancel(context.Background())
	p.mu.Lock()
	p.latencies, p.cancel, p.done = nil, cancel, make(chan struct{})
	p.mu.Unlock()
	go func() {
		defer close(p.done)
		tick := time.NewTicker(probeEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			began := time.Now()
			if err := p.get(ctx); err != nil && ctx.Err() == nil {
				continue
			}
			p.mu.Lock()
			p.latencies = append(p.latencies, time.Since(began))
			p.mu.Unlock()
		}
	}()
}

// stop ends probing and returns the p50 and p99 latency seen.
func (p *probe) stop() (time.Duration, time.Duration) {
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	s := slices.Clone(p.latencies)
	slices.Sort(s)
	if len(s) == 0 {
		return 0, 0
	}
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

// measure probes an idle server for d.
func (p *probe) measure(d time.Duration) (time.Duration, time.Duration) {
	p.start()
	time.Sleep(d) // the length of the idle sample itself, not a wait for anything
	return p.stop()
}
