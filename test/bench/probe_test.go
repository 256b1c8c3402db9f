package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// probeEvery is the probe's rate: a steady client beside the migration,
// like a controller reading what it owns.
const probeEvery = 50 * time.Millisecond

// probe is another client of the API server: it GETs one object of another
// resource every probeEvery, straight to the server (no latency proxy), so
// its latency is what the server makes every other client wait. It runs in
// a process of its own, as every other client does: in the bench's, which
// holds the API server, the server's garbage collection and scheduler
// would stall the probe's own side of each request too.
type probe struct {
	t          *testing.T
	kubeconfig string
	target     string // namespace/name of the object it GETs

	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

func startProbe(t *testing.T, kubeconfig string, tg *target) *probe {
	t.Helper()
	objs, err := keys(t.Context(), conn{meta: mustMeta(t, mustConfig(t, kubeconfig))}, tg)
	if err != nil || len(objs) == 0 {
		t.Fatalf("probe target: %v", err)
	}
	return &probe{t: t, kubeconfig: kubeconfig, target: tg.plural + "/" + objs[0].Namespace + "/" + objs[0].Name}
}

// start begins probing in a child process, and returns once it probes.
func (p *probe) start() {
	p.cmd, p.stdin, p.out = childTest(p.t, "TestBenchProbe", "BENCH_PROBE="+p.target, "BENCH_KUBECONFIG="+p.kubeconfig)
	for p.out.Scan() {
		if p.out.Text() == probeReady {
			return
		}
	}
	p.t.Fatalf("the probe did not start: %v", p.cmd.Wait())
}

// stop ends probing and returns the p50 and p99 latency seen.
func (p *probe) stop() (time.Duration, time.Duration) {
	p.stdin.Close()
	var s []time.Duration
	for p.out.Scan() {
		if ns, ok := strings.CutPrefix(p.out.Text(), probeLatency); ok {
			d, err := strconv.ParseInt(ns, 10, 64)
			if err != nil {
				p.t.Fatal(err)
			}
			s = append(s, time.Duration(d))
		}
	}
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("probe: %v", err)
	}
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

const (
	probeReady   = "probe-ready"
	probeLatency = "probe-ns: "
)

// TestBenchProbe is the probe, in the child process probe.start started:
// it GETs until its stdin closes, then prints every latency.
func TestBenchProbe(t *testing.T) {
	target := os.Getenv("BENCH_PROBE")
	if target == "" {
		t.Skip("the probe's child process of TestBenchTable")
	}
	plural, rest, _ := strings.Cut(target, "/")
	ns, name, _ := strings.Cut(rest, "/")
	cfg := mustConfig(t, os.Getenv("BENCH_KUBECONFIG"))
	cfg.QPS, cfg.Burst = -1, 0
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ri := dyn.Resource(schema.GroupVersionResource{Group: "bench.example.com", Version: "v1", Resource: plural}).Namespace(ns)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	// One GET off the record opens the connection, as a running client's is.
	if _, err := ri.Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	fmt.Println(probeReady)
	var lat []time.Duration
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			for _, d := range lat {
				fmt.Printf("%s%d\n", probeLatency, d.Nanoseconds())
			}
			return
		case <-tick.C:
		}
		began := time.Now()
		if _, err := ri.Get(ctx, name, metav1.GetOptions{}); err != nil {
			continue
		}
		lat = append(lat, time.Since(began))
	}
}

func mustConfig(t *testing.T, kubeconfig string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
