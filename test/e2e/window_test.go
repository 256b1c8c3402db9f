package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

const windows = "widgets.window.example.com"

func windowSchema(fields ...string) *apiextensionsv1.CustomResourceValidation {
	keep := true
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	for _, f := range fields {
		spec.Properties[f] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec, "status": {Type: "object", XPreserveUnknownFields: &keep}}}}
}

// windowWidgets installs widgets at v1beta1 {a, snapshot}, the storage
// version, with v1 {a} served beside it (conversion None: v1 prunes
// spec.snapshot); the first held of the n objects hold spec.snapshot.
func (e *env) windowWidgets(t *testing.T, n, held int) {
	t.Helper()
	crd := fixtures.CRD("window.example.com", "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1", Served: true},
		fixtures.Version{Name: "v1beta1", Served: true, Storage: true})
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Schema = windowSchema("a")
		if crd.Spec.Versions[i].Name == "v1beta1" {
			crd.Spec.Versions[i].Schema = windowSchema("a", "snapshot")
		}
	}
	if _, err := e.clients.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	objs := make([]fixtures.Object, n)
	for i := range objs {
		spec := map[string]any{"a": fmt.Sprint(i)}
		if i < held {
			spec["snapshot"] = "snap"
		}
		objs[i] = fixtures.Object{Namespace: "ns-0", Name: fmt.Sprintf("w-%03d", i), Spec: spec}
	}
	gvr := schema.GroupVersionResource{Group: "window.example.com", Version: "v1beta1", Resource: "widgets"}
	if err := e.clients.CreateObjects(t.Context(), gvr, "Widget", objs); err != nil {
		t.Fatal(err)
	}
}

// editWindows changes the CRD as a release would, retrying conflicts.
func (e *env) editWindows(t *testing.T, edit func(*apiextensionsv1.CustomResourceDefinition)) {
	t.Helper()
	crds := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd, err := crds.Get(t.Context(), windows, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(crd)
		_, err = crds.Update(t.Context(), crd, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// slowly keeps a pass one request at a time, 20 a second.
var slowly = []string{"--qps", "20", "--burst", "1", "--concurrency", "1"}

// killIn runs the plugin and kills it (SIGKILL: no handler runs) once the
// CRD shows open.
func (e *env) killIn(t *testing.T, open func(*apiextensionsv1.CustomResourceDefinition) bool, args ...string) {
	t.Helper()
	args = append([]string{"crdversion"}, args...)
	cmd := exec.CommandContext(t.Context(), "kubectl", args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.sb.KubeconfigPath(), "HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	crds := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd, err := crds.Get(ctx, windows, metav1.GetOptions{})
		return err == nil && open(crd), nil
	})
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("%v never opened its window: %v\nstdout:\n%s\nstderr:\n%s", args, err, out.String(), errOut.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatalf("%v finished before the kill:\n%s", args, out.String())
	}
}

// etcdHolding counts the widgets whose etcd value holds spec.field.
func (e *env) etcdHolding(t *testing.T, field string) int {
	t.Helper()
	resp, err := e.sb.Etcd().Get(t.Context(), "/registry/window.example.com/widgets/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, kv := range resp.Kvs {
		var obj struct {
			Spec map[string]any `json:"spec"`
		}
		if err := json.Unmarshal(kv.Value, &obj); err != nil {
			t.Fatalf("%s: %v", kv.Key, err)
		}
		if _, ok := obj.Spec[field]; ok {
			n++
		}
	}
	return n
}

// statusNext is status's next step for the widgets, and its exit code.
func (e *env) statusNext(t *testing.T) (lifecycle.Next, int) {
	t.Helper()
	st := e.plugin("status", windows, "-o", "json")
	var doc report.StatusReport
	if err := json.Unmarshal([]byte(st.stdout), &doc); err != nil || len(doc.Items) != 1 {
		t.Fatalf("status -o json: %v\n%s%s", err, st.stdout, st.stderr)
	}
	return doc.Items[0].Next, st.code
}

// kill -9 while migrate serves an unserved old version again for its
// checks: v1beta1 stays served and deprecated, its step record on the CRD.
// status names migrate as the way to close it (exit 3, not 0); the next
// command puts back what the step changed (served false, deprecated false:
// the owner had not deprecated it) before anything else, and goes on.
func TestKilledServeAgainIsClosedByTheNextCommand(t *testing.T) {
	for _, next := range [][]string{
		{"migrate", windows, "--switch-grace=0"},
		// What status named before windows were closed: it must not stop serving with the window open.
		{"promote", windows, "v1", "--to", "blocked", "--despite-clients=requests"},
		// Pruning on the user's word is a command too: it closes the window first.
		{"prune", windows, "--i-have-migrated", "--switch-grace=0"},
	} {
		t.Run(next[0], func(t *testing.T) {
			e := newEnv(t, 0)
			const n = 200
			e.windowWidgets(t, n, 0)
			// The release: v1 storage, v1beta1 no longer served, not deprecated.
			e.editWindows(t, func(crd *apiextensionsv1.CustomResourceDefinition) {
				for i := range crd.Spec.Versions {
					v := &crd.Spec.Versions[i]
					v.Storage = v.Name == "v1"
					v.Served = v.Name == "v1"
				}
			})
			release := filepath.Join(t.TempDir(), "release.yaml")
			if err := os.WriteFile(release, []byte(e.kubectl("get", "crd", windows, "-o", "yaml").mustCode(t, 0).stdout), 0o600); err != nil {
				t.Fatal(err)
			}
			e.killIn(t, func(crd *apiextensionsv1.CustomResourceDefinition) bool {
				v := stages.SpecVersion(crd, "v1beta1")
				return v != nil && v.Served
			}, append([]string{"migrate", windows, "--switch-grace=0"}, slowly...)...)
			if v := stages.SpecVersion(e.crd(windows), "v1beta1"); !v.Served || !v.Deprecated || len(stages.Steps(e.crd(windows))) == 0 {
				t.Fatalf("setup: after the kill v1beta1 is %+v, records %+v: want the window left open", v, stages.Steps(e.crd(windows)))
			}
			st, code := e.statusNext(t)
			if code != 3 || st.Step == nil || st.Step.Op != lifecycle.OpMigrate || !strings.Contains(st.Reason, "v1beta1 was served again") {
				t.Errorf("status with the window open: exit %d, next %+v: want exit 3 and migrate named to close it", code, st)
			}

			// check names it too, with the command that closes it.
			ck := e.plugin("check", "-f", release)
			contains(t, "check with the window open", ck.stdout+ck.stderr, "windowOpen", "v1beta1 was served again", "kubectl crdversion migrate "+windows)

			r := e.plugin(next...)
			t.Logf("%v: exit %d\n%s%s", next, r.code, r.stdout, r.stderr)
			crd := e.crd(windows)
			if v := stages.SpecVersion(crd, "v1beta1"); v == nil || v.Served || v.Deprecated {
				t.Errorf("v1beta1 after %v: %+v, want unserved and not deprecated, as released", next, v)
			}
			if w := stages.OpenWindow(crd); w != nil || len(stages.Steps(crd)) > 0 {
				t.Errorf("after %v: window %+v, records %+v: want none", next, w, stages.Steps(crd))
			}
			if next[0] == "migrate" {
				if r.code != 0 || fmt.Sprint(crd.Status.StoredVersions) != "[v1]" {
					t.Errorf("migrate: exit %d, storedVersions %v: want it done and pruned", r.code, crd.Status.StoredVersions)
				}
				if c, err := e.sb.StoredAPIVersions(t.Context(), "window.example.com", "widgets"); err != nil || c["window.example.com/v1"] != n || len(c) != 1 {
					t.Errorf("etcd after migrate: %v %v", c, err)
				}
			}
		})
	}
}

// kill -9 after promote switched storage and before its old→new→old check
// finished: the switch stands unchecked. The next command runs that check
// first: where it loses data (objects holding spec.snapshot, which v1
// drops), it switches back and says so (exit 1), every object as it was
// in etcd; where it holds, the switch stands and migrate goes on to done.
func TestKilledSwitchCheckIsClosedByTheNextCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		held int
	}{{"loses", 20}, {"holds", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 0)
			// Enough objects that the check after the switch outlasts the kill.
			const n = 600
			e.windowWidgets(t, n, tc.held)
			e.plugin("promote", windows, "v1").mustCode(t, 0) // bridge: v1→v1beta1→v1 keeps {a}
			e.killIn(t, func(crd *apiextensionsv1.CustomResourceDefinition) bool {
				return stages.StorageVersion(crd) == "v1"
			}, "promote", windows, "v1")
			if s := stages.StorageVersion(e.crd(windows)); s != "v1" {
				t.Fatalf("setup: storage %s after the kill", s)
			}
			st, code := e.statusNext(t)
			if code != 3 || st.Step == nil || st.Step.Op != lifecycle.OpMigrate || !strings.Contains(st.Reason, "before checking") {
				t.Errorf("status with the switch unchecked: exit %d, next %+v: want exit 3 and migrate named to run the check", code, st)
			}
			r := e.plugin("migrate", windows, "--switch-grace=0")
			t.Logf("migrate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			crd := e.crd(windows)
			if w := stages.OpenWindow(crd); w != nil {
				t.Errorf("window after migrate: %+v", w)
			}
			if got := e.etcdHolding(t, "snapshot"); got != tc.held {
				t.Errorf("%d objects hold spec.snapshot in etcd, want %d", got, tc.held)
			}
			if tc.held > 0 {
				if r.code != 1 || stages.StorageVersion(crd) != "v1beta1" || !strings.Contains(r.stderr, "switched back") {
					t.Errorf("exit %d, storage %s: want the unchecked switch checked, found losing and switched back (exit 1)\n%s", r.code, stages.StorageVersion(crd), r.stderr)
				}
				return
			}
			if r.code != 0 || stages.StorageVersion(crd) != "v1" || fmt.Sprint(crd.Status.StoredVersions) != "[v1]" {
				t.Errorf("exit %d, storage %s, storedVersions %v: want the switch kept and the migration done", r.code, stages.StorageVersion(crd), crd.Status.StoredVersions)
			}
		})
	}
}
