package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
)

// The deprecated-API metric names no client, and verify's check of a
// deprecated version reads it (v1beta1→v1→v1beta1 on every object): usage
// on the machine that ran verify says the requests were the plugin's own
// and exits 0; on another machine, which has no record of them, and after
// a real client's request, it exits 3.
func TestUsageTellsThePluginsOwnRequestsFromAClients(t *testing.T) {
	e := newEnv(t, 0)
	// A group of its own: the in-process API servers of this test binary
	// share one metrics registry.
	const group = "ownrequests.example.com"
	crd := fixtures.CRD(group, "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1beta1", Served: true, Deprecated: true},
		fixtures.Version{Name: "v1", Served: true, Storage: true})
	if _, err := e.clients.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	objs := make([]fixtures.Object, 5)
	for i := range objs {
		objs[i] = fixtures.Object{Namespace: "default", Name: fmt.Sprintf("w-%d", i), Spec: map[string]any{"size": int64(i)}}
	}
	if err := e.clients.CreateObjects(t.Context(), schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}, "Widget", objs); err != nil {
		t.Fatal(err)
	}

	// One machine: its HOME, and so kubectl's cache, is kept between runs.
	home := t.TempDir()
	onThisMachine := func(args ...string) result {
		t.Helper()
		r, err := plugintest.Kubectl(t.Context(), e.sb.KubeconfigPath(), home, "", args...)
		if err != nil {
			t.Fatal(err)
		}
		return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
	}
	usageDoc := func(r result) report.VersionUsage {
		t.Helper()
		var doc report.UsageReport
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("usage -o json: %v\n%s", err, r.stdout)
		}
		for _, v := range doc.Items[0].Versions {
			if v.Name == "v1beta1" {
				return v
			}
		}
		t.Fatalf("no v1beta1 in %s", r.stdout)
		return report.VersionUsage{}
	}

	onThisMachine("crdversion", "usage", crd.Name).mustCode(t, 0)
	onThisMachine("crdversion", "verify", crd.Name).mustCode(t, 0)

	r := onThisMachine("crdversion", "usage", crd.Name).mustCode(t, 0)
	contains(t, "usage after verify", r.stdout, "yes (widgets): only this plugin's own verify",
		"note: every request to v1beta1 while deprecated was this plugin's own (verify, ")
	v := usageDoc(onThisMachine("crdversion", "usage", crd.Name, "-o", "json").mustCode(t, 0))
	if v.Requested != report.RequestedYes || v.OwnRequests == nil || v.OwnRequests.Requests < 5 || v.OwnRequests.RequestsSince != 0 || v.Attention {
		t.Fatalf("usage -o json after verify: %+v %+v", v, v.OwnRequests)
	}
	t.Logf("verify of 5 objects sent %d requests to v1beta1", v.OwnRequests.Requests)

	// Another machine has no record: the metric's yes is anyone's.
	r = e.plugin("usage", crd.Name).mustCode(t, 3)
	contains(t, "usage on another machine", r.stdout, "attention: v1beta1 is deprecated and still used: requested since the API server started")

	// A real client reads v1beta1.
	e.kubectl("get", "widgets.v1beta1."+group, "-A").mustCode(t, 0)
	r = onThisMachine("crdversion", "usage", crd.Name).mustCode(t, 3)
	contains(t, "usage after a client's read", r.stdout, "since this plugin's own verify",
		"attention: v1beta1 is deprecated and still used: requested by another client than this plugin")
	v = usageDoc(onThisMachine("crdversion", "usage", crd.Name, "-o", "json").mustCode(t, 3))
	if v.OwnRequests == nil || v.OwnRequests.RequestsSince < 1 || !v.Attention {
		t.Fatalf("usage -o json after a client's read: %+v %+v", v, v.OwnRequests)
	}

	// The plugin's next verify cannot take the client's request as its own.
	onThisMachine("crdversion", "verify", crd.Name).mustCode(t, 0)
	onThisMachine("crdversion", "usage", crd.Name).mustCode(t, 3)
}

// promote --to deprecated deprecates v1beta1 and then checks every object
// at it (v1's schema does not keep every field v1beta1's allows, so the
// schemas prove nothing), and migrate checks each again before its
// re-store: usage on that machine says those requests were the plugin's
// own, and a client's read after them makes it exit 3.
func TestUsageAfterPromoteAndMigrate(t *testing.T) {
	e := newEnv(t, 0)
	const group = "ownsteps.example.com"
	crd := fixtures.CRD(group, "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1beta1", Served: true, Storage: true},
		fixtures.Version{Name: "v1", Served: true})
	crd.Spec.Versions[1].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{
		Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}}
	if _, err := e.clients.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	objs := make([]fixtures.Object, 5)
	for i := range objs {
		objs[i] = fixtures.Object{Namespace: "default", Name: fmt.Sprintf("w-%d", i), Spec: map[string]any{"size": int64(i)}}
	}
	// Written at v1 (managedFields name no client of v1beta1), stored at
	// v1beta1.
	if err := e.clients.CreateObjects(t.Context(), schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}, "Widget", objs); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	onThisMachine := func(args ...string) result {
		t.Helper()
		r, err := plugintest.Kubectl(t.Context(), e.sb.KubeconfigPath(), home, "", append([]string{"crdversion"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
	}

	onThisMachine("promote", crd.Name, "v1", "--to", "bridge").mustCode(t, 0)
	r := onThisMachine("promote", crd.Name, "v1").mustCode(t, 0)
	contains(t, "promote to deprecated", r.stdout, "bridge → deprecated")
	if strings.Contains(r.stdout+r.stderr, "proven by the schemas") {
		t.Fatalf("the schemas prove the step, so nothing reads v1beta1:\n%s%s", r.stdout, r.stderr)
	}
	r = onThisMachine("usage", crd.Name).mustCode(t, 0)
	contains(t, "usage after promote", r.stdout, "yes (widgets): only this plugin's own promote")

	onThisMachine("migrate", crd.Name, "--switch-grace=0").mustCode(t, 0)
	r = onThisMachine("usage", crd.Name).mustCode(t, 0)
	contains(t, "usage after promote and migrate", r.stdout, "yes (widgets): only this plugin's own promote, migrate")

	e.kubectl("get", "widgets.v1beta1."+group, "-n", "default", "w-0").mustCode(t, 0)
	r = onThisMachine("usage", crd.Name).mustCode(t, 3)
	contains(t, "usage after a client's read", r.stdout, "1 request since this plugin's own promote, migrate")
}

// A proxy in front answers the plugin's first requests to the deprecated
// version 429 (Retry-After, no flow schema: the API server never saw
// them), and client-go retries them. Those answers are no requests the
// API server counted, so a run that met them records nothing of its own:
// three reads a real client made meanwhile cannot hide in the room they
// would leave, and usage exits 3.
func TestUsageThroughAThrottlingProxy(t *testing.T) {
	e := newEnv(t, 0)
	const group = "throttled.example.com" // its own: the metrics registry is shared
	crd := fixtures.CRD(group, "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1beta1", Served: true, Deprecated: true},
		fixtures.Version{Name: "v1", Served: true, Storage: true})
	if _, err := e.clients.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	objs := make([]fixtures.Object, 5)
	for i := range objs {
		objs[i] = fixtures.Object{Namespace: "default", Name: fmt.Sprintf("w-%d", i), Spec: map[string]any{"size": int64(i)}}
	}
	if err := e.clients.CreateObjects(t.Context(), schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}, "Widget", objs); err != nil {
		t.Fatal(err)
	}
	// A real client reads v1beta1 three times while the plugin's run is
	// under way: before the proxy's first 429 is answered, so the API
	// server has counted them by the time the run settles its own count.
	v1beta1 := schema.GroupVersionResource{Group: group, Version: "v1beta1", Resource: "widgets"}
	throttled := throttlingProxy(t, e, "/apis/"+group+"/v1beta1/", 3, func() {
		for range 3 {
			if _, err := e.clients.Dynamic.Resource(v1beta1).List(context.Background(), metav1.ListOptions{}); err != nil {
				t.Error(err)
			}
		}
	})
	home := t.TempDir()
	run := func(kubeconfig string, args ...string) result {
		t.Helper()
		r, err := plugintest.Kubectl(t.Context(), kubeconfig, home, "", args...)
		if err != nil {
			t.Fatal(err)
		}
		return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
	}
	run(throttled.kubeconfig, "crdversion", "verify", crd.Name).mustCode(t, 0)
	if n := throttled.sent.Load(); n != 3 {
		t.Fatalf("the proxy answered %d requests 429, want 3", n)
	}
	r := run(e.sb.KubeconfigPath(), "crdversion", "usage", crd.Name).mustCode(t, 3)
	contains(t, "usage after a throttled run and a client's reads", r.stdout, "attention: v1beta1 is deprecated and still used")
	if contains1(r.stdout, "only this plugin's own") {
		t.Errorf("the client's reads were taken for the plugin's own:\n%s", r.stdout)
	}
}

// proxy429 is a proxy in front of the sandbox that answers the first n
// requests under a path 429 with Retry-After, as a proxy's rate limit does,
// calling first before it answers the first.
type proxy429 struct {
	kubeconfig string
	// seen counts the requests under the path; sent, those answered 429.
	seen, sent atomic.Int32
}

func throttlingProxy(t *testing.T, e *env, prefix string, n int32, first func()) *proxy429 {
	t.Helper()
	cfg := e.sb.RestConfig()
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := rest.TransportFor(&rest.Config{TLSClientConfig: cfg.TLSClientConfig})
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy429{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = tr
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, prefix) && p.seen.Add(1) <= n {
			if p.sent.Add(1) == 1 {
				first()
			}
			w.Header().Set("Retry-After", "1")
			http.Error(w, "rate limited by the proxy", http.StatusTooManyRequests)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: srv.URL, InsecureSkipTLSVerify: true}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	kc.CurrentContext = "proxy"
	p.kubeconfig = filepath.Join(t.TempDir(), "proxy.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return p
}
