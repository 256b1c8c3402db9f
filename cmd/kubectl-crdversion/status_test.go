package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/sandbox"
)

// countingTransport counts the requests a command sends.
type countingTransport struct {
	next  http.RoundTripper
	count *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.count.Add(1)
	return c.next.RoundTrip(r)
}

// runInProcess runs the plugin's root command against the sandbox and
// returns stdout and the number of API requests it sent.
func runInProcess(t testing.TB, sb *sandbox.Sandbox, args ...string) (string, int64, error) {
	t.Helper()
	var n atomic.Int64
	flags := genericclioptions.NewConfigFlags(true)
	kubeconfig := sb.KubeconfigPath()
	flags.KubeConfig = &kubeconfig
	flags.WrapConfigFn = func(cfg *rest.Config) *rest.Config {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, count: &n} })
		return cfg
	}
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	cmd := newCmdRoot(flags, streams)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	if errOut.Len() > 0 {
		t.Logf("stderr: %s", errOut)
	}
	return out.String(), n.Load(), err
}

func installCRDs(t testing.TB, sb *sandbox.Sandbox, n int) {
	t.Helper()
	clients, err := fixtures.NewClients(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		crd := fixtures.CRD(fmt.Sprintf("g%03d.example.com", i), "Thing", "things", apiextensionsv1.NamespaceScoped, false,
			fixtures.Version{Name: "v1beta1", Served: true, Storage: true},
			fixtures.Version{Name: "v1", Served: true})
		if _, err := clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// status sends one request however many CRDs there are; -o wide adds one
// object count per CRD and nothing else.
func TestStatusRequestCount(t *testing.T) {
	sb := sandbox.StartT(t, sandbox.Options{})
	const crds = 50
	installCRDs(t, sb, crds)

	out, n, err := runInProcess(t, sb, "status")
	if err != nil {
		t.Fatal(err)
	}
	// Each CRD starts one row in the versions table and one in the next-step table.
	rows := 0
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "things.g") {
			rows++
		}
	}
	if rows != 2*crds {
		t.Errorf("status printed %d CRD rows, want %d", rows, 2*crds)
	}
	if n != 1 {
		t.Errorf("status sent %d requests for %d CRDs, want 1", n, crds)
	}

	_, n, err = runInProcess(t, sb, "status", "-o", "wide")
	if err != nil {
		t.Fatal(err)
	}
	if n != 1+crds {
		t.Errorf("status -o wide sent %d requests for %d CRDs, want %d", n, crds, 1+crds)
	}
}
