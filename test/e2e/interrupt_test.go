package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Ctrl-C in the middle of `kubectl crdversion migrate`: the signal reaches
// the plugin (kubectl execs it), the run stops (writes in flight are
// abandoned: each changes nothing), reports itself interrupted, prunes nothing and changes no
// object; running again completes and prunes.
func TestMigrateCtrlC(t *testing.T) {
	const objects = 1200
	e := newEnv(t, objects)
	certs := objects / 2
	gvr := schema.GroupVersionResource{Group: "pki.example.com", Version: "v1", Resource: "certificates"}
	before := e.contents(gvr)

	// A low rate limit keeps the run long enough to interrupt it mid-way.
	out, errOut := interruptMigrate(t, e, "certificates")
	contains(t, "interrupted migrate", out, "stopped: interrupted", "not pruned", "certificates.pki.example.com: stopped at v1: of the ", "listed before it stopped", "run it again to go on")
	if strings.Contains(out, "once more") {
		t.Errorf("an interrupted migrate reports a pass after the grace that never ran:\n%s", out)
	}
	noCancelNoise(t, errOut)
	c, err := e.sb.StoredAPIVersions(t.Context(), "pki.example.com", "certificates")
	if err != nil || c["pki.example.com/v1"] == certs || c["pki.example.com/v1alpha2"] == 0 {
		t.Fatalf("etcd after Ctrl-C: %v %v (want a partly migrated set)", c, err)
	}
	if sv := e.crd("certificates.pki.example.com").Status.StoredVersions; len(sv) != 2 {
		t.Errorf("storedVersions after Ctrl-C: %v", sv)
	}

	again := e.plugin("migrate", "certificates", "-q", "--switch-grace=0").mustCode(t, 0)
	contains(t, "migrate after Ctrl-C", again.stdout, "(pruned)")
	if c, err := e.sb.StoredAPIVersions(t.Context(), "pki.example.com", "certificates"); err != nil || len(c) != 1 || c["pki.example.com/v1"] != certs {
		t.Fatalf("etcd after rerun: %v %v", c, err)
	}
	if after := e.contents(gvr); !maps.Equal(before, after) {
		t.Errorf("objects changed by an interrupted migration and its rerun")
	}
}

// noCancelNoise fails on a log line client-go writes for a request the
// interrupt cancelled: the run's own lines say what it stopped.
func noCancelNoise(t *testing.T, stderr string) {
	t.Helper()
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "context canceled") {
			t.Errorf("stderr after Ctrl-C has a cancellation logged: %s", line)
		}
	}
}

// contents maps every object of the resource to what a user wrote in it:
// labels, annotations, spec and status.
func (e *env) contents(gvr schema.GroupVersionResource) map[string]string {
	e.t.Helper()
	list, err := e.clients.Dynamic.Resource(gvr).List(e.t.Context(), metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range list.Items {
		b, err := json.Marshal([]any{o.GetLabels(), o.GetAnnotations(), o.Object["spec"], o.Object["status"]})
		if err != nil {
			e.t.Fatal(err)
		}
		out[o.GetNamespace()+"/"+o.GetName()] = string(b)
	}
	if len(out) == 0 {
		e.t.Fatalf("no %s to compare", gvr.Resource)
	}
	return out
}

// Ctrl-C during `migrate --all`: the CRD in hand stops, and every CRD not
// reached is named; the exit says the work is not done.
func TestMigrateAllCtrlCNamesWhatWasNotDone(t *testing.T) {
	e := newEnv(t, 1200)
	_, errOut := interruptMigrate(t, e, "--all")
	contains(t, "interrupted migrate --all", errOut, "interrupted: not migrated: gadgets.example.com")
	noCancelNoise(t, errOut)
	if sv := e.crd("gadgets.example.com").Status.StoredVersions; len(sv) != 2 {
		t.Errorf("gadgets was not reached, yet storedVersions = %v", sv)
	}
}

// interruptMigrate runs `kubectl crdversion migrate TARGET` slowly, sends
// SIGINT once it has re-stored some certificates, and expects exit 3.
func interruptMigrate(t *testing.T, e *env, target string) (string, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "kubectl", "crdversion", "migrate", target, "--qps", "100", "--burst", "1", "--concurrency", "2", "--switch-grace=0")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.sb.KubeconfigPath(), "HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := e.sb.StoredAPIVersions(ctx, "pki.example.com", "certificates")
		return c["pki.example.com/v1"] >= 50, err
	})
	if err != nil {
		t.Fatalf("the migration never started writing: %v\n%s", err, errOut.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("interrupted migrate %s: %v, want exit 3\nstdout:\n%s\nstderr:\n%s", target, err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}
