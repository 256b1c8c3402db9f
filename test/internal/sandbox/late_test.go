package sandbox

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// A late server, its CRD watch held, keeps storing at the old storage
// version after the others switched, while its writes reach etcd at once;
// released, it catches up.
func TestLateServerStoresAtTheOldVersionUntilReleased(t *testing.T) {
	start := time.Now()
	s := StartT(t, Options{})
	late := s.AddAPIServerT(t, ServerOptions{Late: true})
	t.Logf("sandbox and late server ready in %s", time.Since(start))
	c, err := fixtures.NewClients(s.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	lc, err := fixtures.NewClients(late.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	crd := fixtures.CRD("example.com", "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1beta1", Served: true, Storage: true},
		fixtures.Version{Name: "v1", Served: true})
	if _, err := c.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	v1beta1, v1 := storageVersionHash("example.com", "v1beta1", "Widget"), storageVersionHash("example.com", "v1", "Widget")
	for _, d := range []discovery.DiscoveryInterface{c.CRDs.Discovery(), lc.CRDs.Discovery()} {
		waitForHash(t, d, v1beta1)
	}

	late.WatchHold.Hold()
	if err := c.SwitchStorage(t.Context(), crd.Name, "v1", false); err != nil {
		t.Fatal(err)
	}
	waitForHash(t, c.CRDs.Discovery(), v1)
	poll(t, "the late server's watch to hold the switch", func(context.Context) (bool, error) {
		return late.WatchHold.Queued() > 0, nil
	})
	if got, err := widgetsHash(lc.CRDs.Discovery()); err != nil || got != v1beta1 {
		t.Fatalf("late server's storageVersionHash = %q, %v; want v1beta1's %q", got, err, v1beta1)
	}
	// Its reads are not late: a GET of the CRD reads etcd.
	got, err := lc.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), crd.Name, metav1.GetOptions{})
	if err != nil || !got.Spec.Versions[1].Storage {
		t.Fatalf("a GET through the late server does not see the switch: %v", err)
	}
	create(t, lc, "late-held")
	create(t, c, "main-switched")
	assertStored(t, s, "late-held", "example.com/v1beta1")
	assertStored(t, s, "main-switched", "example.com/v1")

	late.WatchHold.Release()
	waitForHash(t, lc.CRDs.Discovery(), v1)
	// The CRD handler drops its storage on the informer's event, discovery
	// follows through a queue: it may, rarely, lag discovery a moment, on a
	// real cluster as here.
	for i := 0; ; i++ {
		name := fmt.Sprintf("late-released-%d", i)
		create(t, lc, name)
		v, err := s.StoredAPIVersion(t.Context(), "example.com", "widgets", "ns", name)
		if err != nil {
			t.Fatal(err)
		}
		if v == "example.com/v1" {
			break
		}
		if i == 20 {
			t.Fatalf("after release, the late server still stores at %s", v)
		}
		t.Logf("%s stored at %s after discovery switched", name, v)
	}
	t.Logf("done in %s", time.Since(start))
}

func TestBalancerRoundRobin(t *testing.T) {
	s := StartT(t, Options{})
	other := s.AddAPIServerT(t, ServerOptions{})
	configs := []*rest.Config{s.RestConfig(), other.RestConfig()}
	b := BalanceT(t, configs...)
	leaf := func(i int) string { // the serving certificate, first in CAData
		block, _ := pem.Decode(configs[i].CAData)
		return string(block.Bytes)
	}
	if leaf(0) == leaf(1) {
		t.Fatal("the servers share a serving certificate")
	}
	// A connection per request, each answered with the shared token.
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}
	for i := range 4 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, b.RestConfig().Host+"/apis/apiextensions.k8s.io/v1", nil)
		req.Header.Set("Authorization", "Bearer "+b.RestConfig().BearerToken)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %s", i, resp.Status)
		}
		if got := resp.TLS.PeerCertificates[0].Raw; string(got) != leaf(i%2) {
			t.Errorf("request %d reached the wrong server", i)
		}
	}
	if got := b.Connections(); !slices.Equal(got, []int64{2, 2}) {
		t.Errorf("Connections() = %v, want [2 2]", got)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", b.Kubeconfig())
	if err != nil || cfg.Host != b.RestConfig().Host || !cfg.Insecure || cfg.BearerToken != b.RestConfig().BearerToken {
		t.Fatalf("kubeconfig: %+v, %v", cfg, err)
	}
}

// storageVersionHash is what discovery reports for a storage version, as
// k8s.io/apiserver/pkg/endpoints/discovery computes it.
func storageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// widgetsHash is the storageVersionHash discovery reports for widgets at
// example.com/v1, "" while it lists none.
func widgetsHash(d discovery.DiscoveryInterface) (string, error) {
	list, err := d.ServerResourcesForGroupVersion("example.com/v1")
	if err != nil {
		return "", err
	}
	for _, r := range list.APIResources {
		if r.Name == "widgets" {
			return r.StorageVersionHash, nil
		}
	}
	return "", nil
}

func waitForHash(t *testing.T, d discovery.DiscoveryInterface, want string) {
	t.Helper()
	var got string
	poll(t, "discovery to report storageVersionHash "+want, func(context.Context) (bool, error) {
		got, _ = widgetsHash(d)
		return got == want, nil
	})
}

func poll(t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func create(t *testing.T, c fixtures.Clients, name string) {
	t.Helper()
	objs := []fixtures.Object{{Namespace: "ns", Name: name, Spec: map[string]any{}}}
	if err := c.CreateObjects(t.Context(), widgets, "Widget", objs); err != nil {
		t.Fatal(err)
	}
}

func assertStored(t *testing.T, s *Sandbox, name, want string) {
	t.Helper()
	if got, err := s.StoredAPIVersion(t.Context(), "example.com", "widgets", "ns", name); err != nil || got != want {
		t.Errorf("%s stored at %q, %v; want %q", name, got, err, want)
	}
}
