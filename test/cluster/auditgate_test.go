package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/auditlog"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fullsandbox"
)

// auditPolicy logs the test's custom resources at Metadata (every verb,
// reads included: what the gate needs), and the filler ConfigMaps whole,
// so that a few of them rotate the log.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  resources:
  - group: auditgate.test
- level: RequestResponse
  namespaces: ["audit-filler"]
  resources:
  - group: ""
    resources: ["configmaps"]
- level: None
`

// The blocked step's gate reads kube-apiserver's own audit log: a
// ServiceAccount's client that read the deprecated version after the
// migration is named (the plugin's own reads are not), from a rotated,
// gzip'd file; the override takes its NAMESPACE/NAME; once it reads the
// storage version, the gate on a log of that new window passes.
func TestBlockedGateReadsTheAuditLog(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "audit")
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := fullsandbox.Start(fullsandbox.Options{APIServerArgs: []string{
		"--audit-policy-file=" + policy, "--audit-log-path=" + filepath.Join(logs, "audit.log"),
		"--audit-log-maxsize=1", "--audit-log-maxbackup=20", "--audit-log-compress"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	e := newEnv(t, c)
	ctx := t.Context()

	w := e.installWidgets("auditgate", 3, false, "auditgate")
	// The objects' writes are history once the prune is in a later second
	// (managedFields times, and so the prune's, are whole seconds).
	afterSecondOf(t, time.Now())
	mustCode(t, e.plugin("promote", w.name(), "v1"), 0) // bridge
	mustCode(t, e.plugin("promote", w.name(), "v1"), 0) // deprecated
	mustCode(t, e.plugin("migrate", w.name(), "--switch-grace=0s", "-q"), 0)

	// After the prune: a ServiceAccount's exporter reads v1beta1, and the
	// plugin reads it too (verify), as the administrator.
	kubeconfig, user := e.serviceAccount("auditgate", "exporter")
	e.bindClusterRole("cluster-admin", "auditgate", "exporter")
	exporter := e.clientOf(kubeconfig, "exporter/1.0")
	if _, err := exporter.Resource(w.gvr("v1beta1")).Namespace("auditgate").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := exporter.Resource(w.gvr("v1beta1")).Namespace("auditgate").Get(ctx, "w-0000", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	mustCode(t, e.plugin("verify", w.name(), "v1beta1"), 0)
	e.waitLogged(logs, w.gvr("v1beta1"), func(clients, own []string) bool {
		return slices.Contains(clients, user) && len(own) > 0
	})

	// The log rotates: those requests are now in a gzip'd file only.
	gz := e.rotateAuditLog(logs)
	r := mustCode(t, e.plugin("usage", w.name(), "--audit-log", gz), 3)
	if line := versionLine(r.Stdout, "auditgate/exporter"); !containsAll(line, "(ServiceAccount)", "exporter/1.0", "get, list") || !strings.Contains(r.Stdout, "v1beta1: 2 clients in the audit log") {
		t.Errorf("usage of the gzip'd file does not name the exporter at v1beta1: %q\n%s", line, r.Stdout)
	}

	// Without a log, the metric: it names nobody.
	r = mustCode(t, e.plugin("promote", w.name(), "v1", "--to", "blocked"), 3)
	contains(t, "the gate without a log", r.Stderr, "still in use by requests: the API server counted requests to v1beta1")

	// With the log: the exporter, by name, and no metric.
	r = mustCode(t, e.plugin("promote", w.name(), "v1", "--to", "blocked", "--audit-log", logs), 3)
	contains(t, "the gate with the log", r.Stderr,
		"still in use by "+user+": ServiceAccount auditgate/exporter requested v1beta1 (get, list; user agent \"exporter/1.0\"): 2 requests since this plugin's prune of storedVersions",
		"(the audit log read ("+logs+"/audit-", "--to blocked --audit-log "+logs+" --despite-clients="+user+"\n",
		"audit log: ")
	if strings.Contains(r.Stderr, "requests: ") || strings.Contains(r.Stderr, `user agent "kubectl-crdversion/`) {
		t.Errorf("the gate with a log names the metric or the plugin's own reads:\n%s", r.Stderr)
	}
	r = mustCode(t, e.plugin("promote", w.name(), "v1", "--to", "blocked", "--audit-log", logs, "--despite-clients=auditgate/exporter", "--dry-run=server"), 0)
	contains(t, "the override by NAMESPACE/NAME", r.Stderr, "warning: stopped serving despite "+user+": ServiceAccount auditgate/exporter requested v1beta1")
	if v := specServed(e.crd(w.name()), "v1beta1"); !v {
		t.Fatal("the server-side dry run stopped serving v1beta1")
	}

	// The exporter moves to v1; the log of the window since (the file the
	// API server writes now) holds its reads of v1 only: the gate passes.
	if _, err := exporter.Resource(w.gvr("v1")).Namespace("auditgate").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	current := filepath.Join(logs, "audit.log")
	e.waitLogged(current, w.gvr("v1"), func(clients, _ []string) bool { return slices.Contains(clients, user) })
	r = mustCode(t, e.plugin("promote", w.name(), "v1", "--to", "blocked", "--audit-log", current), 0)
	contains(t, "the gate on the new window", r.Stderr, "audit log: ", "read from "+current)
	if specServed(e.crd(w.name()), "v1beta1") {
		t.Fatal("v1beta1 still served after the gate passed")
	}
}

// clientOf is a dynamic client with a kubeconfig's identity and a user agent of its own.
func (e *env) clientOf(kubeconfig, agent string) *dynamic.DynamicClient {
	e.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		e.t.Fatal(err)
	}
	cfg.UserAgent = agent
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return dc
}

// waitLogged waits until the audit log at path holds what done wants of
// gvr's users (others, and the plugin's own): the API server writes an
// event after the response it is about.
func (e *env) waitLogged(path string, gvr schema.GroupVersionResource, done func(clients, own []string) bool) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		log, err := auditlog.Read(ctx, []string{path}, auditlog.Options{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		clients, own := log.Clients(gvr)
		var c, o []string
		for _, cl := range clients {
			c = append(c, cl.User)
		}
		for _, cl := range own {
			o = append(o, cl.User)
		}
		last = fmt.Sprintf("clients %q, own %q", c, o)
		return done(c, o), nil
	})
	if err != nil {
		e.t.Fatalf("the audit log at %s did not show the requests to %s within 30s: %s", path, gvr, last)
	}
}

// rotateAuditLog writes filler ConfigMaps (logged whole) until the log has
// rotated and the API server has compressed the rotated file; it returns
// that file.
func (e *env) rotateAuditLog(logs string) string {
	e.t.Helper()
	ctx := e.t.Context()
	if err := e.clients.EnsureNamespace(ctx, "audit-filler"); err != nil {
		e.t.Fatal(err)
	}
	filler := strings.Repeat("x", 300<<10)
	var gz string
	for i := 0; gz == ""; i++ {
		if i == 20 {
			e.t.Fatalf("the audit log did not rotate after %d filler ConfigMaps", i)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("filler-%d-%d", time.Now().UnixNano(), i)}, Data: map[string]string{"x": filler}}
		if _, err := e.kube.CoreV1().ConfigMaps("audit-filler").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
		// Compression runs after the rotation: done when no rotated file is left plain.
		_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			entries, err := os.ReadDir(logs)
			if err != nil {
				return false, err
			}
			gz = ""
			for _, en := range entries {
				switch name := en.Name(); {
				case name == "audit.log":
				case strings.HasSuffix(name, ".log"):
					return false, nil // rotated, not yet compressed
				case strings.HasSuffix(name, ".log.gz"):
					gz = filepath.Join(logs, name)
				}
			}
			return true, nil
		})
	}
	return gz
}

// specServed: the CRD serves version.
func specServed(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			return v.Served
		}
	}
	return false
}

// afterSecondOf waits until the clock is past the second of ts.
func afterSecondOf(t *testing.T, ts time.Time) {
	t.Helper()
	next := ts.Truncate(time.Second).Add(time.Second)
	for !time.Now().After(next) {
		time.Sleep(10 * time.Millisecond)
	}
}
