package usage

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

func TestResourcePath(t *testing.T) {
	for path, want := range map[string]string{
		"/apis/example.com/v1beta1/widgets":                         "example.com/v1beta1, Resource=widgets",
		"/apis/example.com/v1beta1/namespaces/a/widgets/w-0":        "example.com/v1beta1, Resource=widgets",
		"/apis/example.com/v1beta1/namespaces/a/widgets/w-0/status": "example.com/v1beta1, Resource=widgets",
		"/apis/example.com/v1beta1/widgets/w-0/scale":               "example.com/v1beta1, Resource=widgets",
		"/apis/example.com/v1beta1/watch/namespaces/a/widgets":      "example.com/v1beta1, Resource=widgets",
		"/apis/example.com/v1beta1":                                 "",
		"/api/v1/namespaces/a/pods":                                 "",
		"/metrics":                                                  "",
	} {
		gvr, ok := resourcePath(path)
		if got := map[bool]string{true: gvr.String(), false: ""}[ok]; got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}

// fakeServer serves /metrics from a count per path it served, as an API
// server counts apiserver_request_total, and sets the deprecated gauge for
// the deprecated version it was asked for.
type fakeServer struct {
	mu        sync.Mutex
	counts    map[string]int // version -> requests
	requested bool
	// throttle answers that many requests next with a 429 of priority and
	// fairness, which the count holds; proxy with a 429 of a proxy in
	// front, which the server never saw; refuse with a 403.
	throttle, proxy, refuse int
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/metrics" {
		fmt.Fprintln(w, "process_start_time_seconds 1.7e+09")
		for v, n := range f.counts {
			fmt.Fprintf(w, "apiserver_request_total{code=\"200\",group=\"example.com\",resource=\"widgets\",verb=\"GET\",version=%q} %d\n", v, n)
		}
		if f.requested {
			fmt.Fprintln(w, `apiserver_requested_deprecated_apis{group="example.com",removed_release="",resource="widgets",subresource="",version="v1beta1"} 1`)
		}
		return
	}
	switch {
	case f.proxy > 0:
		f.proxy--
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many requests", http.StatusTooManyRequests)
		return
	case f.throttle > 0:
		f.throttle--
		gvr, _ := resourcePath(r.URL.Path)
		f.counts[gvr.Version]++
		w.Header().Set("Retry-After", "1")
		w.Header().Set(flowSchemaHeader, "fs-uid")
		http.Error(w, "too many requests", http.StatusTooManyRequests)
		return
	case f.refuse > 0:
		f.refuse--
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	gvr, _ := resourcePath(r.URL.Path)
	f.counts[gvr.Version]++
	if gvr.Version == "v1beta1" {
		f.requested = true
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintln(w, `{}`)
}

// A run's own requests to a deprecated version are recorded where the
// server's count grew by exactly them; usage then says "only this
// plugin's own" until anyone else requests it. A client's request during
// the run, or before it, records nothing.
func TestOwnRequests(t *testing.T) {
	crd := widgets("example.com",
		apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1beta1", Served: true, Deprecated: true},
		apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true})
	crd.UID = types.UID("uid-1")
	srv := &fakeServer{counts: map[string]int{"v1beta1": 5}}
	// TLS: a record needs every answer told to come from one server.
	ts := httptest.NewTLSServer(srv)
	defer ts.Close()
	cfg := &rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	records := OwnRecords{Dir: t.TempDir()}
	ctx := context.Background()
	run := func(versions []string, during func()) {
		own, err := NewOwnRequests(records, func(context.Context, string) (*apiextensionsv1.CustomResourceDefinition, error) { return crd, nil }, cfg)
		if err != nil {
			t.Fatal(err)
		}
		own.SetCommand("verify")
		client := &http.Client{Transport: own.Wrap(ts.Client().Transport)}
		for _, v := range versions {
			resp, err := client.Get(ts.URL + "/apis/example.com/" + v + "/namespaces/a/widgets/w-0")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		if during != nil {
			during()
		}
		if err := own.Settle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	own := func() (OwnUse, bool) {
		m, err := DeprecatedRequests(ctx, dc.RESTClient())
		if err != nil {
			t.Fatal(err)
		}
		u, ok := records.Own(crd, m)["v1beta1"]
		return u, ok
	}
	other := func() {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		srv.counts["v1beta1"]++
		srv.requested = true
	}

	run([]string{"v1beta1", "v1", "v1beta1", "v1beta1"}, nil)
	if u, ok := own(); !ok || u.Requests != 3 || u.Since != 0 || u.Commands[0] != "verify" {
		t.Fatalf("after the plugin's own: %+v %v", u, ok)
	}
	// A later run adds to the record while nobody else requested it.
	run([]string{"v1beta1"}, nil)
	if u, ok := own(); !ok || u.Requests != 4 || u.Since != 0 {
		t.Fatalf("after a second run: %+v %v", u, ok)
	}
	// A client's request shows as one since.
	other()
	if u, ok := own(); !ok || u.Since != 1 {
		t.Fatalf("after a client's request: %+v %v", u, ok)
	}
	// A run after it cannot claim the client's request: the record stays.
	run([]string{"v1beta1"}, nil)
	if u, ok := own(); !ok || u.Since != 2 || u.Requests != 4 {
		t.Fatalf("a run after a client's request: %+v %v", u, ok)
	}

	// Fresh records: a client's request during the run records nothing.
	records.Dir = t.TempDir()
	srv.mu.Lock()
	srv.requested = false
	srv.mu.Unlock()
	run([]string{"v1beta1"}, other)
	if u, ok := own(); ok {
		t.Fatalf("a client's request during the run was taken as the plugin's: %+v", u)
	}

	// Three 429s of a proxy in front, which the server's count does not
	// hold, and three reads by a client: the count grew by as many as the
	// run sent, but the run's own are only three of them.
	records.Dir = t.TempDir()
	srv.mu.Lock()
	srv.requested, srv.proxy = false, 3
	srv.mu.Unlock()
	run([]string{"v1beta1", "v1beta1", "v1beta1", "v1beta1", "v1beta1", "v1beta1"}, func() { other(); other(); other() })
	if u, ok := own(); ok {
		t.Fatalf("a proxy's 429s made room for a client's requests: %+v", u)
	}
	// The control: priority and fairness throttled three (the server
	// counts them, as the answers name the flow schema): all six are the
	// run's own.
	records.Dir = t.TempDir()
	srv.mu.Lock()
	srv.requested, srv.throttle = false, 3
	srv.mu.Unlock()
	run([]string{"v1beta1", "v1beta1", "v1beta1", "v1beta1", "v1beta1", "v1beta1"}, nil)
	if u, ok := own(); !ok || u.Requests != 6 {
		t.Fatalf("after throttled and served requests of its own: %+v %v, want all 6", u, ok)
	}
	// A 403 may be counted or not (refused by the authorizer, or by
	// admission): the run records nothing.
	records.Dir = t.TempDir()
	srv.mu.Lock()
	srv.requested, srv.refuse = false, 1
	srv.mu.Unlock()
	run([]string{"v1beta1", "v1beta1"}, nil)
	if u, ok := own(); ok {
		t.Fatalf("a run with a refused request recorded %+v", u)
	}
}

func TestRecord(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "widgets"}
	start := time.Unix(1.7e9, 0)
	m := func(started time.Time, count float64, requested bool) *DeprecatedAPIs {
		d := &DeprecatedAPIs{Access: MetricsRead, StartedAt: started, Requests: map[schema.GroupVersionResource]float64{gvr: count}}
		if requested {
			d.Series = []DeprecatedSeries{{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource}}
		}
		return d
	}
	prev := []OwnRecord{{Version: "v1beta1", Server: start, Counted: 10, Requests: 4, Commands: []string{"verify"}}}
	for _, tc := range []struct {
		name          string
		before, after *DeprecatedAPIs
		sent          int64
		kept          []OwnRecord
		want          int64 // requests recorded; -1 none
	}{
		{"never requested before, grew by ours", m(start, 5, false), m(start, 8, true), 3, nil, 3},
		{"grew by more: a client's too", m(start, 5, false), m(start, 9, true), 3, nil, -1},
		{"grew by less: some answered elsewhere", m(start, 5, false), m(start, 7, true), 3, nil, -1},
		{"another server answered after", m(start, 5, false), m(start.Add(time.Second), 8, true), 3, nil, -1},
		{"requested before, not by us", m(start, 5, true), m(start, 8, true), 3, nil, -1},
		{"requested before, by us only", m(start, 10, true), m(start, 12, true), 2, prev, 6},
		{"requested before, by us and since", m(start, 11, true), m(start, 13, true), 2, prev, -1},
	} {
		rec, ok := record(gvr, tc.sent, tc.before, tc.after, tc.kept, "migrate", start)
		switch {
		case tc.want < 0 && ok:
			t.Errorf("%s: recorded %+v", tc.name, rec)
		case tc.want >= 0 && (!ok || rec.Requests != tc.want || rec.Counted != tc.after.Requests[gvr]):
			t.Errorf("%s: %+v %v, want %d requests", tc.name, rec, ok, tc.want)
		}
	}
}
