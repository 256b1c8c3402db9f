package e2e

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// env is one in-process API server with the demo's CRDs and objects.
type env struct {
	t       *testing.T
	sb      *sandbox.Sandbox
	clients fixtures.Clients
	// home, when set, is one HOME for every command, as on one machine:
	// the plugin's records of its own requests and sightings carry over.
	// Unset, each command runs in a HOME of its own.
	home string
}

func newEnv(t *testing.T, objects int) *env {
	t.Helper()
	sb := sandbox.StartT(t, sandbox.Options{})
	clients, err := fixtures.NewClients(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	if objects > 0 {
		if err := fixtures.InstallDemo(t.Context(), clients, objects); err != nil {
			t.Fatal(err)
		}
		// The demo's objects are this test's writes: managedFields times are seconds, and the
		// blocked step's gate counts a write in the prune's second as a client's. Tests start
		// past that second, as a cluster whose objects were not written a moment ago would.
		pastThisSecond(t)
		// Whatever a test ran, etcd must end with no object stored at a
		// version that storedVersions no longer names.
		t.Cleanup(func() {
			for _, r := range []struct{ group, resource string }{
				{"pki.example.com", "certificates"}, {"storage.example.com", "backups"},
				{"policy.example.com", "clusterpolicies"}, {"example.com", "gadgets"},
			} {
				bad, err := sb.CheckStoredVersions(context.Background(), r.resource+"."+r.group, r.group, r.resource)
				if err != nil {
					t.Errorf("checking etcd against storedVersions of %s: %v", r.resource, err)
				}
				for _, b := range bad {
					t.Errorf("etcd at the end, %s: %s", r.resource, b)
				}
			}
		})
	}
	return &env{t: t, sb: sb, clients: clients}
}

type result struct {
	stdout, stderr string
	code           int
}

// kubectl runs real kubectl with KUBECONFIG pointing at the sandbox.
func (e *env) kubectl(args ...string) result {
	e.t.Helper()
	return e.kubectlIn("", args...)
}

// kubectlIn runs real kubectl with stdin as its standard input.
func (e *env) kubectlIn(stdin string, args ...string) result {
	e.t.Helper()
	home := e.home
	if home == "" {
		home = e.t.TempDir()
	}
	r, err := plugintest.Kubectl(e.t.Context(), e.sb.KubeconfigPath(), home, stdin, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
}

// plugin runs `kubectl crdversion ARGS`.
func (e *env) plugin(args ...string) result {
	e.t.Helper()
	return e.kubectl(append([]string{"crdversion"}, args...)...)
}

// crdVersions snapshots every CRD's resourceVersion, to prove a command
// changed nothing.
func (e *env) crdVersions() map[string]string {
	e.t.Helper()
	list, err := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, crd := range list.Items {
		out[crd.Name] = crd.ResourceVersion
	}
	return out
}

func (e *env) crd(name string) *apiextensionsv1.CustomResourceDefinition {
	e.t.Helper()
	crd, err := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return crd
}

func (r result) mustCode(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	return r
}

var contains = plugintest.Contains

func specVersion(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

func sameCRDs(t *testing.T, before, after map[string]string) {
	t.Helper()
	if !maps.Equal(before, after) {
		t.Errorf("CRDs changed: %v -> %v", before, after)
	}
}

func contains1(got, want string) bool { return strings.Contains(got, want) }

// sharedMetric: the in-process API servers of one test binary share one
// metrics registry, so another test's requests to the demo's CRDs at a
// deprecated version show in this one's deprecated-API metric. A step to
// blocked that is not about the gate passes --despite-clients=requests;
// the gate's own test (blocked_test.go) expects the metric's count anyway.

// pastThisSecond returns once the clock is past the current second.
func pastThisSecond(t *testing.T) {
	t.Helper()
	next := time.Now().Truncate(time.Second).Add(time.Second)
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return time.Now().After(next), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
