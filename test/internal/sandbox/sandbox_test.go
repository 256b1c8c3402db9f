package sandbox

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func installWidgets(t *testing.T, s *Sandbox, n int) fixtures.Clients {
	t.Helper()
	c, err := fixtures.NewClients(s.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	crd := fixtures.CRD("example.com", "Widget", "widgets", apiextensionsv1.NamespaceScoped, true,
		fixtures.Version{Name: "v1", Served: true, Storage: true})
	if _, err := c.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	objs := make([]fixtures.Object, n)
	for i := range objs {
		objs[i] = fixtures.Object{Namespace: "ns", Name: "w" + string(rune('a'+i)), Spec: map[string]any{"i": int64(i)}}
	}
	if err := c.CreateObjects(t.Context(), widgets, "Widget", objs); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSandboxServesCRDsAndExposesEtcd(t *testing.T) {
	start := time.Now()
	s := StartT(t, Options{})
	t.Logf("sandbox ready in %s", time.Since(start))
	installWidgets(t, s, 3)

	v, err := s.StoredAPIVersion(t.Context(), "example.com", "widgets", "ns", "wa")
	if err != nil || v != "example.com/v1" {
		t.Fatalf("StoredAPIVersion = %q, %v", v, err)
	}
	counts, err := s.StoredAPIVersions(t.Context(), "example.com", "widgets")
	if err != nil || counts["example.com/v1"] != 3 || len(counts) != 1 {
		t.Fatalf("StoredAPIVersions = %v, %v", counts, err)
	}

	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("no kubectl on PATH")
	}
	out, err := exec.Command("kubectl", "--kubeconfig", s.KubeconfigPath(), "get", "widgets", "-A", "-o", "name").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "widget.example.com/wa") {
		t.Fatalf("kubectl get widgets: %v\n%s", err, out)
	}
}

func TestTwoSandboxesInOneProcess(t *testing.T) {
	a, b := StartT(t, Options{}), StartT(t, Options{})
	installWidgets(t, a, 1)
	cb, err := fixtures.NewClients(b.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cb.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "widgets.example.com", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("second sandbox sees the first one's CRD: %v", err)
	}
}

// A restarted API server keeps the data, the address, the certificate and
// the token: a client of the old one goes on with the new one.
func TestRestartKeepsDataAndAddress(t *testing.T) {
	s := StartT(t, Options{})
	installWidgets(t, s, 2)
	before := s.RestConfig()
	c, err := fixtures.NewClients(before)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RestartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	if after := s.RestConfig(); after.Host != before.Host || after.BearerToken != before.BearerToken || string(after.CAData) != string(before.CAData) {
		t.Errorf("restart changed the server's identity: %s -> %s", before.Host, after.Host)
	}
	got, err := c.Dynamic.Resource(widgets).Namespace("ns").Get(t.Context(), "wb", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the old client after a restart: %v", err)
	}
	if i, _, _ := unstructuredInt(got.Object, "spec", "i"); i != 1 {
		t.Errorf("spec.i = %d, want 1", i)
	}
	kc, err := os.ReadFile(s.KubeconfigPath())
	if err != nil || !strings.Contains(string(kc), before.Host) {
		t.Errorf("kubeconfig does not name %s: %v", before.Host, err)
	}
}

func TestCompactExpiresContinueTokens(t *testing.T) {
	s := StartT(t, Options{DisableWatchCache: true})
	c := installWidgets(t, s, 3)
	page, err := c.Dynamic.Resource(widgets).List(t.Context(), metav1.ListOptions{Limit: 1})
	if err != nil || page.GetContinue() == "" {
		t.Fatalf("first page: continue %q, %v", page.GetContinue(), err)
	}
	// A write moves the revision past the token's, so compaction removes it.
	objs := []fixtures.Object{{Namespace: "ns", Name: "late", Spec: map[string]any{}}}
	if err := c.CreateObjects(t.Context(), widgets, "Widget", objs); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err = c.Dynamic.Resource(widgets).List(t.Context(), metav1.ListOptions{Limit: 1, Continue: page.GetContinue()})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("continue after compaction: %v, want 410 Expired", err)
	}
}

func TestStopRemovesTempDir(t *testing.T) {
	s, err := Start(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.dir
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("temp dir %s still there: %v", dir, err)
	}
}

func unstructuredInt(obj map[string]any, fields ...string) (int64, bool, error) {
	cur := any(obj)
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false, nil
		}
		cur = m[f]
	}
	i, ok := cur.(int64)
	return i, ok, nil
}
