package controller_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The example operator (controller/cmd/example-operator), built and run
// as a process against kube-apiserver: it migrates and prunes its CRD
// after the storage switch, and serves the Migrator's metrics on the
// manager's /metrics.
func TestExampleOperator(t *testing.T) {
	e := newEnv(t)
	w := e.install("example", func(*apiextensionsv1.CustomResourceDefinition) {}, objects(10, "example-a"))
	bin := filepath.Join(t.TempDir(), "example-operator")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/example-operator")
	build.Dir = filepath.Join("..", "..", "controller")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the example: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	var stderr bytes.Buffer
	op := exec.Command(bin, "--crd", w.name(), "--leader-election-namespace", "default", "--metrics-bind-address", addr, "--switch-grace=-1ns")
	op.Env = append(os.Environ(), "KUBECONFIG="+e.c.Kubeconfig)
	op.Stderr = &stderr
	if err := op.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = op.Process.Signal(syscall.SIGTERM)
		_ = op.Wait()
		if t.Failed() {
			t.Logf("the example's log:\n%s", stderr.String())
		}
	})

	e.switchStorage(w)
	e.waitStoredVersions(w, "v1")
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 10}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v, want %v", got, want)
	}
	want := fmt.Sprintf(`crdversion_migration_objects_restored_total{crd=%q} 10`, w.name())
	var body string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		body = scrape(ctx, "http://"+addr+"/metrics")
		return strings.Contains(body, want), nil
	})
	if err != nil {
		t.Errorf("/metrics lacks %q within %s:\n%s", want, within, grep(body, "crdversion_"))
	}
}

// freeAddr is a loopback address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func scrape(ctx context.Context, url string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grep(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
