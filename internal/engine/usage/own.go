package usage

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/crdnotes"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
)

// OwnRequests tells this plugin's own requests at deprecated versions from others': the
// deprecated-API metric names no client, and the old→new→old checks set it too. It counts a
// run's requests per deprecated version and reads apiserver_request_total before and after;
// where the count grew by exactly the run's own, on one server, with no earlier use but
// recorded own, it records that count (OwnRecords): requests up to it were this plugin's.
// Any doubt records nothing, and the metric's "yes" stands as anyone's.
type OwnRequests struct {
	records OwnRecords
	// getCRD and metrics reach the API server without counting.
	getCRD  func(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error)
	metrics rest.Interface
	// metricsBy are the servers that answered the metrics reads.
	metricsBy answeredBy

	mu      sync.Mutex
	command string
	// crds are the CRDs the run named (Know); other groups' are looked up when it ends.
	crds map[schema.GroupResource]*apiextensionsv1.CustomResourceDefinition
	runs map[schema.GroupVersionResource]*ownRun
	// before is the metrics read before the first counted request (nil: unread, record nothing).
	before     *DeprecatedAPIs
	readBefore sync.Once
}

// ownRun counts the requests to one version in this run.
type ownRun struct {
	crd  *apiextensionsv1.CustomResourceDefinition
	sent atomic.Int64
	by   answeredBy
	// unsure: an answer the server's count may or may not hold.
	unsure atomic.Bool
}

// NewOwnRequests counts a run's own deprecated requests into records. getCRD and the metrics
// reads (metricsConfig) must not go through Wrap: they are not part of the count.
func NewOwnRequests(records OwnRecords, getCRD func(context.Context, string) (*apiextensionsv1.CustomResourceDefinition, error), metricsConfig *rest.Config) (*OwnRequests, error) {
	o := &OwnRequests{records: records, getCRD: getCRD,
		crds: map[schema.GroupResource]*apiextensionsv1.CustomResourceDefinition{}, runs: map[schema.GroupVersionResource]*ownRun{}}
	cfg := rest.CopyConfig(metricsConfig)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return metricsTransport{by: &o.metricsBy, next: rt} })
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	o.metrics = dc.RESTClient()
	return o, nil
}

// SetCommand names what a record says made the requests ("verify").
func (o *OwnRequests) SetCommand(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.command = name
}

// Know names the CRDs the run works on: requests to undeprecated versions cost no metrics read.
func (o *OwnRequests) Know(crds []apiextensionsv1.CustomResourceDefinition) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range crds {
		c := &crds[i]
		o.crds[schema.GroupResource{Group: c.Spec.Group, Resource: c.Spec.Names.Plural}] = c
	}
}

// Wrap is a client-go transport wrapper (rest.Config.Wrap) that counts.
func (o *OwnRequests) Wrap(rt http.RoundTripper) http.RoundTripper {
	return ownTransport{own: o, next: rt}
}

type ownTransport struct {
	own  *OwnRequests
	next http.RoundTripper
}

// flowSchemaHeader on an answer names the flow schema: the API server's own filter saw it.
const flowSchemaHeader = "X-Kubernetes-PF-FlowSchema-UID"

// RoundTrip counts a request the API server counts: one it answered. A 429 naming a flow
// schema is counted (RecordDroppedRequest); one without may be a proxy's. A 401 or 403 may
// come from a filter (not counted) or admission (counted). Where the count cannot be
// matched, the run records nothing.
func (t ownTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	run := t.own.runFor(r.Context(), r.URL.Path)
	resp, err := t.next.RoundTrip(r)
	if run != nil && err == nil {
		switch resp.StatusCode {
		case http.StatusTooManyRequests:
			if resp.Header.Get(flowSchemaHeader) != "" {
				run.sent.Add(1)
			} else {
				run.unsure.Store(true)
			}
		case http.StatusUnauthorized, http.StatusForbidden:
			run.unsure.Store(true)
		default:
			run.sent.Add(1)
		}
		run.by.saw(resp)
	}
	if r.Method != http.MethodGet {
		t.own.changed(r.URL.Path)
	}
	return resp, err
}

// changed forgets what the run knew of a CRD it writes: a step that deprecates a version then
// checks objects at it, and those requests must be counted.
func (o *OwnRequests) changed(path string) {
	const crds = "/apis/" + apiextensionsv1.GroupName + "/v1/customresourcedefinitions/"
	name, ok := strings.CutPrefix(path, crds)
	if !ok {
		return
	}
	name, _, _ = strings.Cut(name, "/") // the status subresource too
	resource, group, _ := strings.Cut(name, ".")
	gr := schema.GroupResource{Group: group, Resource: resource}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.crds, gr)
	for gvr, run := range o.runs {
		switch {
		case gvr.GroupResource() != gr:
		case run == nil:
			delete(o.runs, gvr)
		default:
			run.crd = nil
		}
	}
}

func (t ownTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// builtinGroups are kube-apiserver's own API groups the plugin requests: no CRD's.
var builtinGroups = map[string]bool{
	apiextensionsv1.GroupName: true, "authorization.k8s.io": true, "discovery.k8s.io": true,
	"storagemigration.k8s.io": true, "coordination.k8s.io": true,
}

// runFor is the count of the version path addresses (a known CRD's deprecated version, or an
// unknown group's resource); nil otherwise. The first counted waits for the metrics read.
func (o *OwnRequests) runFor(ctx context.Context, path string) *ownRun {
	gvr, ok := resourcePath(path)
	if !ok || builtinGroups[gvr.Group] {
		return nil
	}
	run := o.lookUpRun(gvr)
	if run != nil {
		// Only counted requests wait for the read, and none waits on the lock during it.
		o.readBefore.Do(func() {
			if m, err := o.readMetrics(ctx); err == nil && m.Access == MetricsRead && !m.StartedAt.IsZero() {
				o.mu.Lock()
				o.before = m
				o.mu.Unlock()
			}
		})
	}
	return run
}

// lookUpRun is the count of gvr's requests, made at its first request.
func (o *OwnRequests) lookUpRun(gvr schema.GroupVersionResource) *ownRun {
	o.mu.Lock()
	defer o.mu.Unlock()
	if run, seen := o.runs[gvr]; seen {
		return run
	}
	crd, known := o.crds[gvr.GroupResource()]
	var run *ownRun
	if v := specVersion(crd, gvr.Version); !known || v != nil && v.Served && v.Deprecated {
		run = &ownRun{crd: crd}
	}
	o.runs[gvr] = run
	return run
}

func specVersion(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	if crd == nil {
		return nil
	}
	return stages.SpecVersion(crd, name)
}

// resourcePath reads the GVR of /apis/G/V/[namespaces/NS/]R..., with or without /watch/;
// discovery (/apis/G/V) and the core group (/api) are no CRD's.
func resourcePath(path string) (schema.GroupVersionResource, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 4 || parts[0] != "apis" {
		return schema.GroupVersionResource{}, false
	}
	gvr := schema.GroupVersionResource{Group: parts[1], Version: parts[2]}
	rest := parts[3:]
	if rest[0] == "watch" {
		rest = rest[1:]
	}
	switch {
	case len(rest) >= 3 && rest[0] == "namespaces":
		gvr.Resource = rest[2]
	case len(rest) >= 1:
		gvr.Resource = rest[0]
	}
	return gvr, gvr.Resource != ""
}

// settleWait bounds the wait for the server to count the run's last requests: it counts once
// its handler returns, a moment after the client may have its answer.
const settleWait = 2 * time.Second

// Settle reads the metrics after the run and records each deprecated version it requested, as
// OwnRequests describes. It sends nothing if there was none or no read before.
func (o *OwnRequests) Settle(ctx context.Context) error {
	o.mu.Lock()
	command, before := o.command, o.before
	runs := map[schema.GroupVersionResource]*ownRun{}
	for gvr, r := range o.runs {
		if r != nil && r.sent.Load() > 0 {
			runs[gvr] = r
		}
	}
	o.mu.Unlock()
	if before == nil {
		return nil
	}
	// Only a deprecated version of a CRD is recorded.
	o.lookUp(ctx, runs)
	for gvr, r := range runs {
		if v := specVersion(r.crd, gvr.Version); v == nil || !v.Served || !v.Deprecated {
			delete(runs, gvr)
		}
	}
	if len(runs) == 0 {
		return nil
	}
	var after *DeprecatedAPIs
	for deadline := time.Now().Add(settleWait); ; {
		var err error
		if after, err = o.readMetrics(ctx); err != nil {
			return err
		}
		if after.Access != MetricsRead || time.Now().After(deadline) || counted(before, after, runs) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if after.Access != MetricsRead {
		return nil
	}
	now := time.Now().UTC()
	for gvr, r := range runs {
		if !sameServer(&r.by, &o.metricsBy) || r.unsure.Load() {
			continue
		}
		kept := o.records.notes().Load(r.crd)
		if rec, ok := record(gvr, r.sent.Load(), before, after, kept, command, now); ok {
			kept = slices.DeleteFunc(kept, func(k OwnRecord) bool { return k.Version == rec.Version && k.Server.Equal(rec.Server) })
			o.records.notes().Store(r.crd, append(kept, rec))
		}
	}
	return nil
}

// counted reports whether the server counted every request of runs, or is another server.
func counted(before, after *DeprecatedAPIs, runs map[schema.GroupVersionResource]*ownRun) bool {
	for gvr, r := range runs {
		if after.StartedAt.Equal(before.StartedAt) && after.Requests[gvr]-before.Requests[gvr] < float64(r.sent.Load()) {
			return false
		}
	}
	return true
}

// record is what a run that sent sent requests to a version adds to its records, if anything:
// the same server's count grew by exactly those, and before the run no request had reached
// the version while deprecated but those an earlier record accounts for.
func record(gvr schema.GroupVersionResource, sent int64, before, after *DeprecatedAPIs, kept []OwnRecord, command string, now time.Time) (OwnRecord, bool) {
	if !after.StartedAt.Equal(before.StartedAt) || after.Requests[gvr]-before.Requests[gvr] != float64(sent) {
		return OwnRecord{}, false
	}
	rec := OwnRecord{Version: gvr.Version, Server: before.StartedAt, Counted: after.Requests[gvr], Requests: sent, Last: now}
	if before.RequestedWhileDeprecated(gvr) {
		prev := findOwn(kept, gvr.Version, before.StartedAt)
		if prev == nil || prev.Counted != before.Requests[gvr] {
			return OwnRecord{}, false
		}
		rec.Requests += prev.Requests
		rec.Commands = slices.Clone(prev.Commands)
	}
	if command != "" && !slices.Contains(rec.Commands, command) {
		rec.Commands = append(rec.Commands, command)
	}
	return rec, true
}

// OwnRecord says that on one API server (known by its start), every request to a deprecated
// version up to its count Counted was this plugin's own.
type OwnRecord struct {
	Version string    `json:"version"`
	Server  time.Time `json:"serverStarted"`
	Counted float64   `json:"counted"`
	// Requests is how many requests this plugin's runs sent to the version.
	Requests int64 `json:"requests"`
	// Commands are the plugin's commands that sent them.
	Commands []string  `json:"commands"`
	Last     time.Time `json:"last"`
}

func findOwn(kept []OwnRecord, version string, server time.Time) *OwnRecord {
	for i := range kept {
		if kept[i].Version == version && kept[i].Server.Equal(server) {
			return &kept[i]
		}
	}
	return nil
}

// OwnRecords keep OwnRecord in a directory of this machine, a file per CRD: nothing is
// written to the cluster. Another machine's records are not seen; its runs count as clients.
type OwnRecords struct{ Dir string }

func (s OwnRecords) notes() crdnotes.Dir[OwnRecord] {
	return crdnotes.Dir[OwnRecord]{Path: s.Dir, Keep: keptOwnPerCRD}
}

// keptOwnPerCRD bounds a CRD's file: the newest records matter.
const keptOwnPerCRD = 32

// OwnUse is what the records say of one deprecated version on the server whose metrics were read.
type OwnUse struct {
	// Commands and Requests are this plugin's own that requested it.
	Commands []string
	Requests int64
	Last     time.Time
	// Since counts requests to the version that server served after this plugin's last
	// recorded one: 0 means every deprecated request was this plugin's.
	Since int64
}

// Own says, per version the metric names, what this plugin's records account for on m's
// server; a version absent has no record there.
func (s OwnRecords) Own(crd *apiextensionsv1.CustomResourceDefinition, m *DeprecatedAPIs) map[string]OwnUse {
	out := map[string]OwnUse{}
	if m == nil || m.Access != MetricsRead || m.StartedAt.IsZero() {
		return out
	}
	kept := s.notes().Load(crd)
	for v := range m.ForCRD(crd) {
		rec := findOwn(kept, v, m.StartedAt)
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v, Resource: crd.Spec.Names.Plural}
		if rec == nil || m.Requests[gvr] < rec.Counted {
			continue
		}
		out[v] = OwnUse{Commands: rec.Commands, Requests: rec.Requests, Last: rec.Last, Since: int64(m.Requests[gvr] - rec.Counted)}
	}
	return out
}

// metricsReadTimeout bounds one /metrics read: a proxy that holds it costs a run this, once.
const metricsReadTimeout = 10 * time.Second

func (o *OwnRequests) readMetrics(ctx context.Context) (*DeprecatedAPIs, error) {
	ctx, cancel := context.WithTimeout(ctx, metricsReadTimeout)
	defer cancel()
	return DeprecatedRequests(ctx, o.metrics)
}

// lookUp reads, a few at a time and each once, the CRDs of resources the run did not know.
func (o *OwnRequests) lookUp(ctx context.Context, runs map[schema.GroupVersionResource]*ownRun) {
	found := map[schema.GroupResource]*apiextensionsv1.CustomResourceDefinition{}
	for gvr, r := range runs {
		if r.crd == nil {
			found[gvr.GroupResource()] = nil
		}
	}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(8)
	for _, gr := range slices.Collect(maps.Keys(found)) {
		g.Go(func() error {
			crd, _ := o.getCRD(ctx, gr.String())
			mu.Lock()
			defer mu.Unlock()
			found[gr] = crd
			return nil
		})
	}
	_ = g.Wait()
	for gvr, r := range runs {
		if r.crd == nil {
			r.crd = found[gvr.GroupResource()]
		}
	}
}
