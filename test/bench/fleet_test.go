package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// TestBenchFleet measures migrate over a fleet: BENCH_CLUSTERS (default 4)
// sandboxes, each behind a latency proxy (BENCH_FLEET_RTT, default 20ms)
// with BENCH_FLEET_N (default 2000) objects to re-store. One cluster alone,
// then the fleet in one command at --parallel 1 and 4, against N times the
// one. Every run starts from a storage switch, so every object is written.
func TestBenchFleet(t *testing.T) {
	if os.Getenv("BENCH") == "" {
		t.Skip("set BENCH=1 (make bench)")
	}
	clusters, n := envInt("BENCH_CLUSTERS", 4), envInt("BENCH_FLEET_N", 2000)
	rtt := 20 * time.Millisecond
	if v := os.Getenv("BENCH_FLEET_RTT"); v != "" {
		var err error
		if rtt, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	bin := buildPlugin(t)
	type member struct {
		sb *sandbox.Sandbox
		fx fixtures.Clients
		c  conn
		tg *target
	}
	fleet := make([]member, clusters)
	merged := clientcmdapi.NewConfig()
	var names []string
	for i := range fleet {
		sb := sandbox.StartT(t, sandbox.Options{})
		fx, err := fixtures.NewClients(sb.RestConfig())
		if err != nil {
			t.Fatal(err)
		}
		c := connect(t, sb, rtt)
		fleet[i] = member{sb: sb, fx: fx, c: c, tg: install(t, fx, "fleetobjs", n, nil)}
		kc, err := clientcmd.LoadFromFile(c.kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("c%d", i)
		names = append(names, name)
		merged.Clusters[name], merged.AuthInfos[name] = kc.Clusters["b"], kc.AuthInfos["b"]
		merged.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	merged.CurrentContext = names[0]
	kubeconfig := filepath.Join(t.TempDir(), "fleet.kubeconfig")
	if err := clientcmd.WriteToFile(*merged, kubeconfig); err != nil {
		t.Fatal(err)
	}
	crd := fleet[0].tg.crd
	// run flips every cluster the run takes, off the clock, then times the
	// command.
	run := func(contexts []string, args ...string) time.Duration {
		for i := range contexts {
			flip(t, fleet[i].fx, fleet[i].c, fleet[i].tg)
		}
		cmdArgs := []string{"migrate", crd, "-q", "--prune=false", "--switch-grace=0", "--kubeconfig", kubeconfig}
		for _, c := range contexts {
			cmdArgs = append(cmdArgs, "--context", c)
		}
		cmd := exec.CommandContext(t.Context(), bin, append(cmdArgs, args...)...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
		}
		return took
	}
	one := run(names[:1])
	p1 := run(names, "--parallel", "1")
	p4 := run(names, "--parallel", "4")
	for i := range fleet {
		assertMigrated(t, fleet[i].sb, fleet[i].tg)
	}
	fmt.Printf("\nfleet migrate: %d clusters × %d objects, RTT %s\n", clusters, n, rtt)
	fmt.Printf("%-28s %10s %8s\n", "RUN", "TOOK", "× ONE")
	for _, r := range []struct {
		name string
		took time.Duration
	}{{"one cluster", one}, {fmt.Sprintf("%d × one cluster", clusters), time.Duration(clusters) * one}, {"fleet --parallel 1", p1}, {"fleet --parallel 4", p4}} {
		fmt.Printf("%-28s %10s %8.2f\n", r.name, r.took.Round(10*time.Millisecond), float64(r.took)/float64(one))
	}
}
