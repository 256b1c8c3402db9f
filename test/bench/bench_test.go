// Package bench measures `migrate` against what exists, on the in-process
// API server, in one run so the ratios are fair: `make bench`.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/convwebhook"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// target is one CRD whose objects all need re-storing at each run: runs
// flip its storage version between v1beta1 and v1.
type target struct {
	crd     string
	plural  string
	objects int
	version string // current storage version
}

// conn is a way to the API server: direct, or through the latency proxy.
type conn struct {
	cfg        *rest.Config
	kubeconfig string
	dyn        dynamic.Interface
	meta       metadata.Interface
	disc       discovery.DiscoveryInterface
}

// result of one algorithm at one latency: objects/s per run, peak RSS, and
// the probe's p50 and p99 latency during each run.
type result struct {
	rates    []float64
	rssKB    int64
	p50, p99 []time.Duration
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func (r result) median() float64 {
	s := slices.Clone(r.rates)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

type algorithm struct {
	name   string
	small  bool           // runs on the smaller baseline set (the tiny one from 50 ms)
	target func() *target // runs on this set instead
	// readOnly algorithms re-store nothing: no flip before, no check after.
	readOnly bool
	// setup runs before each run, off the clock.
	setup func(ctx context.Context, c conn, tg *target) error
	run   func(ctx context.Context, c conn, tg *target) (time.Duration, int64, error)
	// ceiling rows are fixed-concurrency no-op loops; the table's ceiling
	// at each round trip is the best of them.
	ceiling bool
}

// loop is a client written here: it reports how long its work took, the
// clock started after whatever it fetches beforehand.
type loop func(ctx context.Context, c conn, tg *target) (time.Duration, error)

// loops run in child processes (TestBenchChild), each in a process of its
// own as every real client is: in this one they would share the API
// server's Go runtime and scheduler, an advantage no real client has.
var loops = map[string]loop{"ceiling": ceiling, "listed": listedLoop, "ksvm": ksvm, "svm": inTreeSVM, "cleanup": cleanup}

func TestBenchTable(t *testing.T) {
	if os.Getenv("BENCH") == "" {
		t.Skip("benchmarks run with make bench (BENCH=1)")
	}
	n := envInt("BENCH_N", 10000)
	small := envInt("BENCH_BASELINE_N", min(n, 2000))
	tinyN := min(small, 200)
	runs := envInt("BENCH_RUNS", 3)
	rtts := []time.Duration{0, 10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}
	if v := os.Getenv("BENCH_RTT"); v != "" {
		rtts = nil
		for _, f := range strings.Split(v, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil {
				t.Fatal(err)
			}
			rtts = append(rtts, d)
		}
	}
	plugin := buildPlugin(t)
	ctx := t.Context()

	sb := sandbox.StartT(t, sandbox.Options{})
	cfg := sb.RestConfig()
	cfg.QPS, cfg.Burst = -1, 0
	fx, err := fixtures.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Each set is installed when an algorithm first needs it, so
	// BENCH_ONLY runs install only what they use.
	lazy := func(plural string, n int, edit func(*apiextensionsv1.CustomResourceDefinition)) func() *target {
		var tg *target
		return func() *target {
			if tg == nil {
				start := time.Now()
				tg = install(t, fx, plural, n, edit)
				t.Logf("installed %d %s in %s", n, plural, time.Since(start).Round(time.Second))
			}
			return tg
		}
	}
	big := lazy("widgets", n, nil)
	little := lazy("gadgets", small, nil)
	tiny := lazy("gizmos", tinyN, nil)
	checked := lazy("sprockets", n, unprovable)
	wh, err := convwebhook.Start(convwebhook.Correct)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = wh.Stop() })
	webhooked := lazy("flanges", n, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Conversion = wh.Conversion() })
	cleaned := lazy("cogs", n, withRetiredVersion)
	probe := startProbe(t, connect(t, sb, 0).kubeconfig, tiny())

	algorithms := []algorithm{
		// Every ceiling runs on the set migrate does: short runs on a small
		// set came out faster than any loop on the large one.
		{name: "(a) raw ceiling: no-op patch loop, 8 workers, pre-fetched keys", ceiling: true, run: inChild("ceiling", "8")},
		{name: "(a) raw ceiling: no-op patch loop, 32 workers", ceiling: true, run: inChild("ceiling", "32")},
		{name: "(a) raw ceiling: no-op patch loop, 128 workers", ceiling: true, run: inChild("ceiling", "128")},
		{name: "(a) raw ceiling: no-op patch loop, 256 workers", ceiling: true, run: inChild("ceiling", "256")},
		// Not a ceiling: what the listing, which the ceiling does before
		// its clock starts, costs a loop that cannot skip it.
		{name: "(a′) the 256-worker loop, listing on the clock", run: inChild("listed", "256")},
		{name: "kubectl crdversion migrate", run: runPlugin(plugin, "migrate")},
		// Gentle paces from 20 writes a second: 10,000 objects would take
		// minutes a run at every round trip.
		{name: "kubectl crdversion migrate --gentle", target: little, run: runPlugin(plugin, "migrate", "--gentle")},
		// The schemas cannot prove old→new→old on these sets: each object
		// is checked as it is re-stored (a dry run, then the write), beside
		// the same set re-stored unchecked. --switch-grace=0: the run starts
		// right after a switch, and the wait for writes in flight across it
		// is not what these rows measure.
		{name: "migrate --accept-loss, schemas unprovable (unchecked)", target: checked, run: runChecked(plugin, false, "--switch-grace=0", "--accept-loss")},
		{name: "migrate, schemas unprovable: each object checked as re-stored", target: checked, run: runChecked(plugin, true, "--switch-grace=0")},
		{name: "migrate --accept-loss, Webhook conversion (unchecked)", target: webhooked, run: runChecked(plugin, false, "--switch-grace=0", "--accept-loss")},
		{name: "migrate, Webhook conversion: each object checked as re-stored", target: webhooked, run: runChecked(plugin, true, "--switch-grace=0")},
		{name: "kubectl crdversion verify, one version (objects checked/s)", readOnly: true, run: runVerify(plugin)},
		{name: "managedFields cleanup (promote --to removed), one entry dropped per object", target: cleaned, readOnly: true, setup: addRetiredEntries, run: inChild("cleanup", "")},
		{name: "(b) kube-storage-version-migrator (reimplemented)", small: true, run: inChild("ksvm", "")},
		{name: "(b') in-tree StorageVersionMigration (reimplemented)", small: true, run: inChild("svm", "")},
		{name: "(c) kubectl get, piped to kubectl replace -f -", small: true, run: kubectlReplace},
	}
	if only := os.Getenv("BENCH_ONLY"); only != "" {
		algorithms = slices.DeleteFunc(algorithms, func(a algorithm) bool {
			return !slices.ContainsFunc(strings.Split(only, ","), func(s string) bool {
				exact, ok := strings.CutPrefix(s, "=")
				return (ok && a.name == exact) || (!ok && strings.Contains(a.name, s))
			})
		})
	}
	setFor := func(alg algorithm, rtt time.Duration) *target {
		switch {
		case alg.small && rtt >= 50*time.Millisecond:
			return tiny() // serial algorithms: 10k objects would take hours
		case alg.small:
			return little()
		case alg.target != nil:
			return alg.target()
		default:
			return big()
		}
	}
	// Every set is installed before the first run: the server's heap, and
	// the time its garbage collector takes, grow with what it holds, and a
	// run before the last set came would have had it easier.
	for _, rtt := range rtts {
		for _, alg := range algorithms {
			setFor(alg, rtt)
		}
	}
	// Runs are interleaved (every algorithm once, then again) so a drift
	// in the shared machine's load spreads over all of them alike.
	table := map[string]map[time.Duration]*result{}
	idle := map[time.Duration][2]time.Duration{}
	for _, rtt := range rtts {
		c := connect(t, sb, rtt)
		p50, p99 := probe.measure(10 * time.Second)
		idle[rtt] = [2]time.Duration{p50, p99}
		t.Logf("probe idle at %s: p50 %s, p99 %s", rtt, p50, p99)
		for run := range runs {
			for _, alg := range algorithms {
				tg := setFor(alg, rtt)
				if !alg.readOnly {
					flip(t, fx, c, tg)
				}
				if alg.setup != nil {
					if err := alg.setup(ctx, c, tg); err != nil {
						t.Fatalf("setting up %s: %v", alg.name, err)
					}
				}
				probe.start()
				elapsed, rss, err := alg.run(ctx, c, tg)
				p50, p99 := probe.stop()
				if err != nil {
					t.Fatalf("%s at %s: %v", alg.name, rtt, err)
				}
				if !alg.readOnly {
					assertMigrated(t, sb, tg)
				}
				if table[alg.name] == nil {
					table[alg.name] = map[time.Duration]*result{}
				}
				if table[alg.name][rtt] == nil {
					table[alg.name][rtt] = &result{}
				}
				r := table[alg.name][rtt]
				r.rates = append(r.rates, float64(tg.objects)/elapsed.Seconds())
				r.rssKB = max(r.rssKB, rss)
				r.p50, r.p99 = append(r.p50, p50), append(r.p99, p99)
				t.Logf("run %d, %s at %s: %.0f obj/s, probe p50 %s p99 %s", run+1, alg.name, rtt, r.rates[len(r.rates)-1], p50, p99)
			}
		}
	}
	printTable(t, algorithms, rtts, table, idle, n, small, tinyN, runs)
}

func install(t *testing.T, fx fixtures.Clients, plural string, n int, edit func(*apiextensionsv1.CustomResourceDefinition)) *target {
	t.Helper()
	crd := fixtures.CRD("bench.example.com", strings.ToUpper(plural[:1])+plural[1:len(plural)-1], plural, apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1beta1", Served: true, Storage: true},
		fixtures.Version{Name: "v1", Served: true})
	if edit != nil {
		edit(crd)
	}
	if _, err := fx.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	objs := make([]fixtures.Object, n)
	for i := range objs {
		objs[i] = benchObject(i)
	}
	gvr := schema.GroupVersionResource{Group: "bench.example.com", Version: "v1beta1", Resource: plural}
	if err := fx.CreateObjects(t.Context(), gvr, crd.Spec.Names.Kind, objs); err != nil {
		t.Fatal(err)
	}
	return &target{crd: crd.Name, plural: plural, objects: n, version: "v1beta1"}
}

// benchObject is the i-th object of a bench resource.
func benchObject(i int) fixtures.Object {
	return fixtures.Object{Namespace: fmt.Sprintf("ns-%d", i%10), Name: fmt.Sprintf("o-%07d", i),
		Labels: map[string]string{"app": "bench"},
		Spec:   map[string]any{"replicas": int64(i % 7), "image": "registry.example.com/app:v1", "args": []any{"--a", "--b"}}}
}

// flip switches the storage version to the other one and waits until the
// switch is in effect and the server's watch cache for the new storage is
// filled, so every object needs re-storing and every algorithm starts from
// the same state, on a warm server.
func flip(t *testing.T, fx fixtures.Clients, c conn, tg *target) {
	t.Helper()
	switchStorage(t, fx, c, tg)
	waitCacheServes(t, c, tg)
}

// waitCacheServes lists until the API server answers from its watch cache.
// A storage switch gives the resource a new cache, which the server fills
// from etcd after the switch (seconds of its CPU at 10,000 objects); until
// then lists read etcd. Waiting here, off the clock, has no algorithm
// charged for the fill, nor its listing slowed by it.
func waitCacheServes(t *testing.T, c conn, tg *target) {
	t.Helper()
	served := func() float64 {
		raw, err := c.disc.RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
		if err != nil {
			t.Fatalf("reading the API server's metrics: %v", err)
		}
		for line := range strings.Lines(string(raw)) {
			if strings.HasPrefix(line, "apiserver_cache_list_total{") && strings.Contains(line, `resource="`+tg.plural+`"`) {
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				return v
			}
		}
		return 0
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		before := served()
		if _, err := c.meta.Resource(tg.gvr()).List(t.Context(), metav1.ListOptions{Limit: 1}); err != nil {
			t.Fatal(err)
		}
		if served() > before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watch cache of %s did not serve a list within 2 minutes of the switch", tg.plural)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// switchStorage switches the storage version to the other one and waits
// until the switch is in effect.
func switchStorage(t *testing.T, fx fixtures.Clients, c conn, tg *target) {
	t.Helper()
	next := map[string]string{"v1beta1": "v1", "v1": "v1beta1"}[tg.version]
	if err := fx.SwitchStorage(t.Context(), tg.crd, next, false); err != nil {
		t.Fatal(err)
	}
	crd, err := fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), tg.crd, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fixtures.WaitStorageInEffect(t.Context(), c.disc, crd, time.Minute); err != nil {
		t.Fatal(err)
	}
	tg.version = next
}

// unprovable gives each version a different default for spec.image, which
// every object sets: no object loses anything on old→new→old, but the
// schemas cannot prove it, so migrate checks every object first.
func unprovable(crd *apiextensionsv1.CustomResourceDefinition) {
	for i := range crd.Spec.Versions {
		spec := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
		spec.Properties = map[string]apiextensionsv1.JSONSchemaProps{
			"image": {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf("%q", "default-"+crd.Spec.Versions[i].Name))}}}
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
}

// runChecked runs migrate with -o json and reads from its report that
// every object was checked as it was re-stored (or, with checked false,
// that none was), and how many requests an object took.
func runChecked(bin string, checked bool, args ...string) func(ctx context.Context, c conn, tg *target) (time.Duration, int64, error) {
	return func(ctx context.Context, c conn, tg *target) (time.Duration, int64, error) {
		r, err := migrateJSON(ctx, bin, checked, c, tg, args...)
		if err != nil {
			return 0, 0, err
		}
		fmt.Printf("%s: %.2f requests an object\n", tg.crd, r.perObject)
		return r.took, r.rss, nil
	}
}

// jsonRun is one run of migrate -o json: how long it took, its peak RSS,
// and the requests it made per object.
type jsonRun struct {
	took      time.Duration
	rss       int64
	perObject float64
}

// migrateJSON runs migrate with -o json and reads from its report that
// every object was checked as it was re-stored (or, with checked false,
// that none was).
func migrateJSON(ctx context.Context, bin string, checked bool, c conn, tg *target, args ...string) (jsonRun, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"migrate", tg.crd, "-q", "--prune=false", "-o", "json", "--kubeconfig", c.kubeconfig}, args...)...)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	start := time.Now()
	out, rss, err := runMeasured(cmd)
	elapsed := time.Since(start)
	if err != nil {
		return jsonRun{}, fmt.Errorf("%v: %s", err, out)
	}
	var doc report.MigrateReport
	if err := json.Unmarshal([]byte(stdout.String()), &doc); err != nil || len(doc.Items) != 1 {
		return jsonRun{}, fmt.Errorf("-o json: %v: %s%s", err, stdout.String(), out)
	}
	r := doc.Items[0]
	byObjects := slices.ContainsFunc(r.Proofs, func(p results.Proof) bool { return p.By == results.ProofObjects && p.Objects == int64(tg.objects) })
	if byObjects != checked || r.Lost != 0 {
		return jsonRun{}, fmt.Errorf("want every object checked: %v, got proofs %+v, lost %d", checked, r.Proofs, r.Lost)
	}
	return jsonRun{took: elapsed, rss: rss, perObject: float64(r.Requests) / float64(tg.objects)}, nil
}

func (tg *target) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "bench.example.com", Version: tg.version, Resource: tg.plural}
}

// storedVersions is an API server whose etcd the bench reads: the
// in-process sandbox or the full one.
type storedVersions interface {
	StoredAPIVersions(ctx context.Context, group, resource string) (map[string]int, error)
}

// assertMigrated checks in etcd that every object of tg is stored at its
// storage version.
func assertMigrated(t *testing.T, s storedVersions, tg *target) {
	t.Helper()
	got, err := s.StoredAPIVersions(t.Context(), "bench.example.com", tg.plural)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["bench.example.com/"+tg.version] != tg.objects {
		t.Fatalf("%d %s not fully re-stored at %s: %v", tg.objects, tg.plural, tg.version, got)
	}
}

func connect(t *testing.T, sb *sandbox.Sandbox, rtt time.Duration) conn {
	t.Helper()
	cfg := sb.RestConfig()
	cfg.QPS, cfg.Burst = -1, 0
	if rtt > 0 {
		cfg.Host = "https://" + startProxyProcess(t, strings.TrimPrefix(cfg.Host, "https://"), rtt/2) // half each way
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["b"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName}
	kc.AuthInfos["b"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["b"] = &clientcmdapi.Context{Cluster: "b", AuthInfo: "b"}
	kc.CurrentContext = "b"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return clientsFor(t, cfg, kubeconfig)
}

func clientsFor(t *testing.T, cfg *rest.Config, kubeconfig string) conn {
	t.Helper()
	c := conn{cfg: cfg, kubeconfig: kubeconfig}
	var err error
	if c.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if c.meta, err = metadata.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if c.disc, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return c
}

func keys(ctx context.Context, c conn, tg *target) ([]metav1.PartialObjectMetadata, error) {
	var out []metav1.PartialObjectMetadata
	_, err := cluster.ListPages(ctx, c.meta, tg.gvr(), 500, func(p cluster.Page) error {
		out = append(out, p.Items...)
		return nil
	})
	return out, err
}

// ceiling: the fastest no-op write loop — empty patches answered with
// metadata only, by BENCH_WORKERS workers over a key list fetched before
// the clock starts; no listing, no reporting.
func ceiling(ctx context.Context, c conn, tg *target) (time.Duration, error) {
	objs, err := keys(ctx, c, tg)
	if err != nil {
		return 0, err
	}
	return noOpLoop(ctx, c, tg, func(work chan<- metav1.PartialObjectMetadata) error {
		for _, o := range objs {
			work <- o
		}
		return nil
	})
}

// listedLoop is the ceiling's loop with the listing on the clock, a page
// at a time as the writes go: what any migrator must pay, since it cannot
// know the objects before it lists them.
func listedLoop(ctx context.Context, c conn, tg *target) (time.Duration, error) {
	return noOpLoop(ctx, c, tg, func(work chan<- metav1.PartialObjectMetadata) error {
		_, err := cluster.ListPages(ctx, c.meta, tg.gvr(), pass.DefaultPageSize, func(p cluster.Page) error {
			for _, o := range p.Items {
				work <- o
			}
			return nil
		})
		return err
	})
}

// noOpLoop starts the clock, and BENCH_WORKERS workers that send an empty
// patch to each object feed hands them.
func noOpLoop(ctx context.Context, c conn, tg *target, feed func(chan<- metav1.PartialObjectMetadata) error) (time.Duration, error) {
	work := make(chan metav1.PartialObjectMetadata)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	start := time.Now()
	for range envInt("BENCH_WORKERS", 32) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for o := range work {
				if _, err := c.meta.Resource(tg.gvr()).Namespace(o.Namespace).Patch(ctx, o.Name, types.MergePatchType, []byte("{}"), metav1.PatchOptions{}); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	err := feed(work)
	close(work)
	wg.Wait()
	return time.Since(start), cmpErr(err, first)
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// ksvm: kube-storage-version-migrator's algorithm: one worker, pages of 500
// full objects, a full-object PUT each, re-GET and PUT again on conflict.
func ksvm(ctx context.Context, c conn, tg *target) (time.Duration, error) {
	ri := c.dyn.Resource(tg.gvr())
	start := time.Now()
	cont := ""
	for {
		list, err := ri.List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
		if err != nil {
			return 0, err
		}
		for i := range list.Items {
			o := &list.Items[i]
			_, err := ri.Namespace(o.GetNamespace()).Update(ctx, o, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				fresh, gerr := ri.Namespace(o.GetNamespace()).Get(ctx, o.GetName(), metav1.GetOptions{})
				if gerr == nil {
					_, err = ri.Namespace(o.GetNamespace()).Update(ctx, fresh, metav1.UpdateOptions{})
				}
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return 0, err
			}
		}
		if cont = list.GetContinue(); cont == "" {
			return time.Since(start), nil
		}
	}
}

// inTreeSVM: the in-tree StorageVersionMigration's algorithm: serially, a
// server-side-apply patch carrying apiVersion, kind, uid and
// resourceVersion per object, over the garbage collector's metadata cache
// (here a key list fetched before the clock starts); a conflict means the
// object was already re-written.
func inTreeSVM(ctx context.Context, c conn, tg *target) (time.Duration, error) {
	objs, err := keys(ctx, c, tg)
	if err != nil {
		return 0, err
	}
	ri := c.dyn.Resource(tg.gvr())
	gv := "bench.example.com/" + tg.version
	kind := strings.ToUpper(tg.plural[:1]) + tg.plural[1:len(tg.plural)-1]
	start := time.Now()
	force := true
	for _, o := range objs {
		body, _ := json.Marshal(map[string]any{"apiVersion": gv, "kind": kind,
			"metadata": map[string]any{"name": o.Name, "namespace": o.Namespace, "uid": o.UID, "resourceVersion": o.ResourceVersion}})
		_, err := ri.Namespace(o.Namespace).Patch(ctx, o.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "storage-version-migrator-controller", Force: &force})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// kubectlReplace: the docs' manual path. The items go as a stream of
// objects rather than a List: kubectl resolves kind List through the core
// API, which the sandbox does not serve.
func kubectlReplace(ctx context.Context, c conn, tg *target) (time.Duration, int64, error) {
	res := tg.plural + ".bench.example.com"
	script := fmt.Sprintf(`set -o pipefail; kubectl get %s -A -o jsonpath='{range .items[*]}{@}{"\n"}{end}' --kubeconfig %s | kubectl replace -f - --kubeconfig %s >/dev/null`, res, c.kubeconfig, c.kubeconfig)
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("%v: %s", err, out)
	}
	return time.Since(start), 0, nil
}

// inChild runs a loop in a child process: this test binary again, running
// TestBenchChild.
func inChild(name, workers string) func(ctx context.Context, c conn, tg *target) (time.Duration, int64, error) {
	return func(ctx context.Context, c conn, tg *target) (time.Duration, int64, error) {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestBenchChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "BENCH_CHILD="+name, "BENCH_WORKERS="+workers, "BENCH_KUBECONFIG="+c.kubeconfig, "BENCH_TARGET="+tg.plural+"/"+tg.version)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return 0, 0, fmt.Errorf("%v: %s", err, out)
		}
		for line := range strings.Lines(string(out)) {
			if ns, ok := strings.CutPrefix(strings.TrimSpace(line), childElapsed); ok {
				d, err := strconv.ParseInt(ns, 10, 64)
				return time.Duration(d), 0, err
			}
		}
		return 0, 0, fmt.Errorf("child %s said no time: %s", name, out)
	}
}

const childElapsed = "bench-elapsed-ns: "

// TestBenchChild is one loop, in the child process inChild started.
func TestBenchChild(t *testing.T) {
	run := loops[os.Getenv("BENCH_CHILD")]
	if run == nil {
		t.Skip("the child process of TestBenchTable")
	}
	cfg := mustConfig(t, os.Getenv("BENCH_KUBECONFIG"))
	cfg.QPS, cfg.Burst = -1, 0
	plural, version, _ := strings.Cut(os.Getenv("BENCH_TARGET"), "/")
	elapsed, err := run(t.Context(), clientsFor(t, cfg, ""), &target{plural: plural, version: version})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s%d\n", childElapsed, elapsed.Nanoseconds())
}

// runPlugin runs the built plugin as a user would, measuring its peak RSS.
func runPlugin(bin string, args ...string) func(ctx context.Context, c conn, tg *target) (time.Duration, int64, error) {
	return func(ctx context.Context, c conn, tg *target) (time.Duration, int64, error) {
		cmd := exec.CommandContext(ctx, bin, append(slices.Clone(args), tg.crd, "-q", "--prune=false", "--kubeconfig", c.kubeconfig)...)
		start := time.Now()
		out, rss, err := runMeasured(cmd)
		if err != nil {
			return 0, 0, fmt.Errorf("%v: %s", err, out)
		}
		return time.Since(start), rss, nil
	}
}

// runMeasured runs cmd and returns its output and its peak RSS in KiB, read
// from the process's own VmHWM while it runs. The rusage of a child is no
// use here: Go starts children with vfork, and Linux folds the parent's
// high-water mark (this test, with an API server in it) into the child's
// at exec.
func runMeasured(cmd *exec.Cmd) ([]byte, int64, error) {
	var out strings.Builder
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &out
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	var peak int64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return []byte(out.String()), peak, err
		case <-tick.C:
			peak = max(peak, vmHWM(status))
		}
	}
}

func vmHWM(status string) int64 {
	raw, err := os.ReadFile(status)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

func buildPlugin(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kubectl-crdversion")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/kubectl-crdversion")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func printTable(t *testing.T, algs []algorithm, rtts []time.Duration, table map[string]map[time.Duration]*result, idle map[time.Duration][2]time.Duration, n, small, tiny, runs int) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d objects; --gentle and (b), (b'), (c): %d objects (the last three %d from 50 ms); median of %d runs; 2 cores shared by API server and client.\n", n, small, tiny, runs)
	b.WriteString("ceiling: the best of the no-op loops at that round trip. probe: a GET every 50 ms straight to the API server, p50/p99 in ms during the run.\n\n")
	b.WriteString("| algorithm |")
	for _, rtt := range rtts {
		fmt.Fprintf(&b, " obj/s @%s | × ceiling | probe @%s |", rtt, rtt)
	}
	b.WriteString(" peak RSS |\n|---|")
	for range rtts {
		b.WriteString("---|---|---|")
	}
	b.WriteString("---|\n")
	ceiling := map[time.Duration]float64{}
	for _, a := range algs {
		for _, rtt := range rtts {
			if a.ceiling {
				ceiling[rtt] = max(ceiling[rtt], table[a.name][rtt].median())
			}
		}
	}
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
	}
	b.WriteString("| probe, idle |")
	for _, rtt := range rtts {
		fmt.Fprintf(&b, " | | %s/%s |", ms(idle[rtt][0]), ms(idle[rtt][1]))
	}
	b.WriteString(" |\n")
	for _, a := range algs {
		fmt.Fprintf(&b, "| %s |", a.name)
		rss := int64(0)
		for _, rtt := range rtts {
			r := table[a.name][rtt]
			rss = max(rss, r.rssKB)
			share := "–"
			if ceiling[rtt] > 0 {
				share = strconv.FormatFloat(r.median()/ceiling[rtt], 'f', 2, 64)
			}
			fmt.Fprintf(&b, " %.0f | %s | %s/%s |", r.median(), share, ms(medianDuration(r.p50)), ms(medianDuration(r.p99)))
		}
		if rss > 0 {
			fmt.Fprintf(&b, " %d MiB |\n", rss/1024)
		} else {
			b.WriteString(" – |\n")
		}
	}
	fmt.Print(b.String())
	t.Log(b.String())
}

func mustMeta(t *testing.T, cfg *rest.Config) metadata.Interface {
	t.Helper()
	m, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// runVerify runs `verify` of the version that is not the storage version:
// one round trip per object.
func runVerify(bin string) func(ctx context.Context, c conn, tg *target) (time.Duration, int64, error) {
	return func(ctx context.Context, c conn, tg *target) (time.Duration, int64, error) {
		other := map[string]string{"v1": "v1beta1", "v1beta1": "v1"}[tg.version]
		cmd := exec.CommandContext(ctx, bin, "verify", tg.crd, other, "-o", "json", "--kubeconfig", c.kubeconfig)
		start := time.Now()
		out, rss, err := runMeasured(cmd)
		if err != nil {
			return 0, 0, fmt.Errorf("%v: %s", err, out)
		}
		return time.Since(start), rss, nil
	}
}

// withRetiredVersion adds v1alpha1, no longer served: what managedFields
// entries of a removed version point at.
func withRetiredVersion(crd *apiextensionsv1.CustomResourceDefinition) {
	v := crd.Spec.Versions[0].DeepCopy()
	v.Name, v.Served, v.Storage = "v1alpha1", false, false
	crd.Spec.Versions = append(crd.Spec.Versions, *v)
}

// addRetiredEntries gives every object a managedFields entry at v1alpha1,
// as a client of that version would have left it: what the cleanup drops.
func addRetiredEntries(ctx context.Context, c conn, tg *target) error {
	objs, err := keys(ctx, c, tg)
	if err != nil {
		return err
	}
	entry, _ := json.Marshal(map[string]any{"op": "add", "path": "/metadata/managedFields/-", "value": map[string]any{
		"manager": "retired-client", "operation": "Update", "apiVersion": "bench.example.com/v1alpha1",
		"time": time.Now().UTC().Format(time.RFC3339), "fieldsType": "FieldsV1",
		"fieldsV1": map[string]any{"f:metadata": map[string]any{"f:labels": map[string]any{"f:app": map[string]any{}}}}}})
	patch := []byte("[" + string(entry) + "]")
	work := make(chan metav1.PartialObjectMetadata)
	var g errgroup.Group
	for range 32 {
		g.Go(func() error {
			for o := range work {
				if _, err := c.meta.Resource(tg.gvr()).Namespace(o.Namespace).Patch(ctx, o.Name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	return g.Wait()
}

// cleanup: the managedFields cleanup promote --to removed runs, through
// pkg/migrate.
func cleanup(ctx context.Context, c conn, tg *target) (time.Duration, error) {
	crds, err := apiextensionsclient.NewForConfig(c.cfg)
	if err != nil {
		return 0, err
	}
	crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, tg.plural+".bench.example.com", metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	res := migration.CleanManagedFields(ctx, c.meta, crd, migration.RestoreOptions{})
	// Every object had an entry to drop: each one was written.
	if !res.Complete() || res.Listed == 0 || res.Rewritten != res.Listed {
		return 0, fmt.Errorf("cleanup: %d listed, %d cleaned, %d unchanged, stopped %q", res.Listed, res.Rewritten, res.Unchanged, res.Stopped)
	}
	return time.Since(start), nil
}
