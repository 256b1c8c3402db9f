package bench

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fullsandbox"
)

// TestBenchAPIServers runs migrate on BENCH_HA_N objects through two
// kube-apiservers on one etcd behind a round-robin TCP balancer, over one
// connection (--one-connection) and spread over several (the default),
// BENCH_RUNS times each, alternating, on the same objects. Each server's
// share of the writes is counted from its own apiserver_request_total. On
// one machine every server shares the same cores: the rows show the
// spread and what it costs, not the multiplier of servers with cores of
// their own.
func TestBenchAPIServers(t *testing.T) {
	if os.Getenv("BENCH") == "" {
		t.Skip("set BENCH=1 (make bench)")
	}
	n := envInt("BENCH_HA_N", 5000)
	runs := envInt("BENCH_RUNS", 3)
	ha := fullsandbox.StartBalancedT(t, 2)
	fx, direct := fullClients(t, ha.Servers[0])
	via := clientsFor(t, mustConfig(t, ha.Kubeconfig), ha.Kubeconfig)
	bin := buildPlugin(t)
	tg := install(t, fx, "widgets", n, nil)

	patches := func() []float64 {
		out := make([]float64, len(ha.Servers))
		for i, s := range ha.Servers {
			var err error
			if out[i], err = s.MetricSum(t.Context(), "apiserver_request_total", `group="bench.example.com"`, `resource="widgets"`, `verb="PATCH"`); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	modes := []struct {
		name string
		args []string
	}{
		{"kubectl crdversion migrate --one-connection", []string{"--one-connection"}},
		{"kubectl crdversion migrate (spread over 8 connections)", nil},
	}
	rates := make([]result, len(modes))
	shares := make([][]string, len(modes))
	for range runs {
		for i, m := range modes {
			flip(t, fx, direct, tg)
			before := patches()
			took, _, err := runPlugin(bin, append([]string{"migrate"}, m.args...)...)(t.Context(), via, tg)
			if err != nil {
				t.Fatal(err)
			}
			assertMigrated(t, ha.Servers[0], tg)
			after := patches()
			total := (after[0] - before[0]) + (after[1] - before[1])
			rates[i].rates = append(rates[i].rates, float64(n)/took.Seconds())
			shares[i] = append(shares[i], fmt.Sprintf("%.0f/%.0f %%", 100*(after[0]-before[0])/total, 100*(after[1]-before[1])/total))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d objects, two kube-apiservers on one etcd behind a round-robin TCP balancer, %d runs each (alternating):\n", n, runs)
	b.WriteString("| migrate | obj/s (median) | each run | writes taken by server 1/2, each run |\n|---|---|---|---|\n")
	for i, m := range modes {
		each := make([]string, len(rates[i].rates))
		for j, r := range rates[i].rates {
			each[j] = fmt.Sprintf("%.0f", r)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s |\n", m.name, rates[i].median(), strings.Join(each, ", "), strings.Join(shares[i], ", "))
	}
	t.Log(b.String())
}

// TestBenchAPIServersChecked runs the checked pass (every object's dry
// run, then its write, on one server shown switched) on BENCH_HA_N objects
// through one, two and three kube-apiservers on one etcd behind a
// round-robin balancer, BENCH_RUNS times each: objects/s, requests an
// object (the bound is two: the dry run and the write), and each server's
// share of the writes, from its own apiserver_request_total.
func TestBenchAPIServersChecked(t *testing.T) {
	if os.Getenv("BENCH") == "" {
		t.Skip("set BENCH=1 (make bench)")
	}
	n := envInt("BENCH_HA_N", 5000)
	runs := envInt("BENCH_RUNS", 3)
	bin := buildPlugin(t)
	var b strings.Builder
	fmt.Fprintf(&b, "\nthe checked pass, %d objects whose round trip the schemas cannot prove, kube-apiservers on one etcd behind a round-robin TCP balancer, %d runs each:\n", n, runs)
	b.WriteString("| servers | obj/s (median) | requests an object (each run) | writes taken by each server, each run |\n|---|---|---|---|\n")
	for servers := 1; servers <= 3; servers++ {
		ha := fullsandbox.StartBalancedT(t, servers)
		fx, direct := fullClients(t, ha.Servers[0])
		via := clientsFor(t, mustConfig(t, ha.Kubeconfig), ha.Kubeconfig)
		tg := install(t, fx, "widgets", n, unprovable)
		writes := func() []float64 {
			out := make([]float64, len(ha.Servers))
			for i, s := range ha.Servers {
				for _, verb := range []string{`verb="PATCH"`, `verb="PUT"`} {
					v, err := s.MetricSum(t.Context(), "apiserver_request_total", `group="bench.example.com"`, `resource="widgets"`, verb, `dry_run=""`)
					if err != nil {
						t.Fatal(err)
					}
					out[i] += v
				}
			}
			return out
		}
		var (
			rate             result
			perObject, share []string
		)
		for range runs {
			flip(t, fx, direct, tg)
			before := writes()
			r, err := migrateJSON(t.Context(), bin, true, via, tg)
			if err != nil {
				t.Fatal(err)
			}
			assertMigrated(t, ha.Servers[0], tg)
			after := writes()
			total := 0.0
			for i := range after {
				total += after[i] - before[i]
			}
			each := make([]string, len(after))
			for i := range after {
				each[i] = fmt.Sprintf("%.0f", 100*(after[i]-before[i])/total)
			}
			rate.rates = append(rate.rates, float64(n)/r.took.Seconds())
			perObject = append(perObject, fmt.Sprintf("%.2f", r.perObject))
			share = append(share, strings.Join(each, "/")+" %")
		}
		fmt.Fprintf(&b, "| %d | %.0f | %s | %s |\n", servers, rate.median(), strings.Join(perObject, ", "), strings.Join(share, ", "))
	}
	t.Log(b.String())
}
