package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// servers: v1beta3 {port, proxyProtocol, accessPolicy} storage, v1beta2 {port, proxyProtocol},
// v1beta1 {port} (Linkerd's servers.policy.linkerd.io, conversion None: storing at a version
// prunes what its schema lacks).
const serversGroup, servers = "policy.example.com", "servers.policy.example.com"

func serversCRD(versions ...fixtures.Version) *apiextensionsv1.CustomResourceDefinition {
	crd := fixtures.CRD(serversGroup, "Server", "servers", apiextensionsv1.NamespaceScoped, false, versions...)
	fields := map[string][]string{"v1beta1": {"port"}, "v1beta2": {"port", "proxyProtocol"}, "v1beta3": {"port", "proxyProtocol", "accessPolicy"}}
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Schema = windowSchema(fields[crd.Spec.Versions[i].Name]...)
	}
	return crd
}

// serversInEtcd is each server's spec as etcd holds it, and the apiVersions it is stored at.
func (e *env) serversInEtcd(t *testing.T) (map[string]map[string]any, map[string]int) {
	t.Helper()
	resp, err := e.sb.Etcd().Get(t.Context(), "/registry/"+serversGroup+"/servers/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	specs, at := map[string]map[string]any{}, map[string]int{}
	for _, kv := range resp.Kvs {
		var obj struct {
			APIVersion string         `json:"apiVersion"`
			Spec       map[string]any `json:"spec"`
			Metadata   struct{ Name string }
		}
		if err := json.Unmarshal(kv.Value, &obj); err != nil {
			t.Fatalf("%s: %v", kv.Key, err)
		}
		specs[obj.Metadata.Name], at[obj.APIVersion] = obj.Spec, at[obj.APIVersion]+1
	}
	return specs, at
}

// Linkerd edge → stable (servers v1beta3 → v1beta1): two storage versions back, one switch at a
// time. The first keeps every field; the second would drop spec.proxyProtocol, which only
// v1beta3 and v1beta2 have: it is checked, undone, and recorded, so upgrade stops with the ways
// on (DECIDE), never the same switch back. The loss accepted by name, the walk goes on: the
// re-store takes that same loss, not asked twice; the owner's apply; upgrade exits 0. etcd at
// the end: every server at v1beta1, spec.port kept, spec.proxyProtocol gone from the 3 that
// held it and from no other field.
func TestLossyDowngradeTwoVersionsBackIsWalkedWithTheLossNamed(t *testing.T) {
	e := newEnv(t, 0)
	const n, held = 6, 3
	e.kubectl("apply", "--server-side", "-f", writeCRD(t, serversCRD(
		fixtures.Version{Name: "v1beta1", Served: true}, fixtures.Version{Name: "v1beta2", Served: true},
		fixtures.Version{Name: "v1beta3", Served: true, Storage: true}))).mustCode(t, 0)
	if _, err := e.clients.WaitEstablished(t.Context(), servers); err != nil {
		t.Fatal(err)
	}
	objs := make([]fixtures.Object, n)
	for i := range objs {
		spec := map[string]any{"port": fmt.Sprint(8080 + i)}
		if i < held {
			spec["proxyProtocol"] = "HTTP/2"
		}
		objs[i] = fixtures.Object{Namespace: "emojivoto", Name: fmt.Sprintf("srv-%d", i), Spec: spec}
	}
	if err := e.clients.CreateObjects(t.Context(), schema.GroupVersionResource{Group: serversGroup, Version: "v1beta3", Resource: "servers"}, "Server", objs); err != nil {
		t.Fatal(err)
	}
	next := writeCRD(t, serversCRD(fixtures.Version{Name: "v1beta1", Served: true, Storage: true}))
	accept := "kubectl crdversion rollback " + servers + " v1beta2 --switch-storage --accept-loss"

	// The walk: the first switch back holds, the second is undone for the loss, and the plan
	// stops at the decision.
	walk := e.plugin("upgrade", "-f", next, "--switch-grace=0")
	t.Logf("upgrade:\n%s%s", walk.stdout, walk.stderr)
	walk.mustCode(t, 3)
	contains(t, "upgrade's steps", walk.stderr, "rollback "+servers+" v1beta3 --switch-storage", "rollback "+servers+" v1beta2 --switch-storage",
		"emojivoto/srv-0", "spec.proxyProtocol", "stopped at")
	contains(t, "upgrade's plan after the refusal", walk.stdout, "DECIDE: keep the fields: add spec.proxyProtocol to the schema of v1beta1",
		"DECIDE: or accept the loss of spec.proxyProtocol on 3 objects by name", accept, "DECIDE: or stay on the current release")
	if crd := e.crd(servers); stages.StorageVersion(crd) != "v1beta2" || stages.OpenWindow(crd) != nil {
		t.Fatalf("after the refused switch: storage %s, window %+v: want v1beta2, none", stages.StorageVersion(crd), stages.OpenWindow(crd))
	}
	// The plan again never repeats the refused switch back: status --release and check say the decision.
	again := e.plugin("upgrade", "-f", next, "--switch-grace=0").mustCode(t, 3)
	for _, line := range strings.Split(again.stderr, "\n") {
		if strings.HasPrefix(line, "upgrade: ") && strings.Contains(line, "kubectl crdversion rollback") {
			t.Errorf("upgrade run again takes a switch back before the decision: %s", line)
		}
	}
	contains(t, "check's fix", e.plugin("check", "-f", next).stdout, "decide: or accept the loss", accept)
	if it := e.statusRelease(t, next); it.Next.Action != lifecycle.ActionFix {
		t.Errorf("status --release: next %+v, want the decision", it.Next)
	}

	// The loss accepted by name: named again, the switch stands, exit 0 with the warning.
	r := e.plugin(strings.Fields(accept)[2:]...)
	t.Logf("%s:\n%s%s", accept, r.stdout, r.stderr)
	r.mustCode(t, 0)
	contains(t, "the accepted loss", r.stdout+r.stderr, "emojivoto/srv-0", "emojivoto/srv-2", "spec.proxyProtocol",
		"warning: "+servers+": v1beta1 is the storage version despite the loss accepted by name: 3 objects lose spec.proxyProtocol")
	if crd := e.crd(servers); stages.StorageVersion(crd) != "v1beta1" || stages.OpenWindow(crd) != nil {
		t.Fatalf("after the accepted switch: storage %s, window %+v", stages.StorageVersion(crd), stages.OpenWindow(crd))
	}

	// The walk goes on to the owner's apply, the re-store taking the loss accepted.
	e.plugin("upgrade", "-f", next, "--switch-grace=0").mustCode(t, 3)
	if crd := e.crd(servers); !slices.Equal(crd.Status.StoredVersions, []string{"v1beta1"}) {
		t.Fatalf("before the apply: storedVersions %v, want [v1beta1]", crd.Status.StoredVersions)
	}
	e.kubectl("apply", "--server-side", "-f", next).mustCode(t, 0)
	waitGone(t, e, serversGroup+"/v1beta3")
	done := e.plugin("upgrade", "-f", next, "--switch-grace=0").mustCode(t, 0)
	contains(t, "upgrade after the apply", done.stdout, "nothing left to do")

	specs, at := e.serversInEtcd(t)
	if len(at) != 1 || at[serversGroup+"/v1beta1"] != n {
		t.Errorf("etcd at the end: %v, want all %d at v1beta1", at, n)
	}
	for i := range n {
		name := fmt.Sprintf("srv-%d", i)
		if want := map[string]any{"port": fmt.Sprint(8080 + i)}; fmt.Sprint(specs[name]) != fmt.Sprint(want) {
			t.Errorf("%s in etcd: spec %v, want %v (spec.proxyProtocol lost as accepted, nothing else)", name, specs[name], want)
		}
	}
}

// statusRelease is status --release's item for the servers.
func (e *env) statusRelease(t *testing.T, release string) report.StatusItem {
	t.Helper()
	st := e.plugin("status", servers, "--release", release, "-o", "json")
	var doc report.StatusReport
	if err := json.Unmarshal([]byte(st.stdout), &doc); err != nil || len(doc.Items) != 1 {
		t.Fatalf("status --release -o json: %v\n%s%s", err, st.stdout, st.stderr)
	}
	return doc.Items[0]
}

// gadgets: v1 {a, extra} the storage version, v1beta1 {a} served beside it; the first held of
// n objects hold spec.extra, which storing at v1beta1 prunes.
func (e *env) switchBackGadgets(t *testing.T, n, held int) {
	t.Helper()
	crd := fixtures.CRD("window.example.com", "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1", Served: true, Storage: true},
		fixtures.Version{Name: "v1beta1", Served: true})
	crd.Spec.Versions[0].Schema, crd.Spec.Versions[1].Schema = windowSchema("a", "extra"), windowSchema("a")
	if _, err := e.clients.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	objs := make([]fixtures.Object, n)
	for i := range objs {
		spec := map[string]any{"a": fmt.Sprint(i)}
		if i < held {
			spec["extra"] = "keep"
		}
		objs[i] = fixtures.Object{Namespace: "ns-0", Name: fmt.Sprintf("w-%03d", i), Spec: spec}
	}
	if err := e.clients.CreateObjects(t.Context(), schema.GroupVersionResource{Group: "window.example.com", Version: "v1", Resource: "widgets"}, "Widget", objs); err != nil {
		t.Fatal(err)
	}
}

// kill -9 after rollback switched storage back and before its new→old→new check finished (rule
// 27): the switch stands unchecked, its step record on the CRD, open. status names the command
// that closes it; the next command runs that check first: where it loses data (objects holding
// spec.extra, which v1beta1 drops), it switches back and says so (exit 1), every object as it
// was in etcd, and the refusal is recorded (the plan's ways on, not the same switch back); where
// it holds, the switch stands, no record is left, and migrate goes on to done.
func TestKilledSwitchBackCheckIsClosedByTheNextCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		held int
	}{{"loses", 20}, {"holds", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 0)
			// Enough objects that the check after the switch outlasts the kill.
			const n = 600
			e.switchBackGadgets(t, n, tc.held)
			e.killIn(t, func(crd *apiextensionsv1.CustomResourceDefinition) bool {
				return stages.StorageVersion(crd) == "v1beta1"
			}, "rollback", windows, "v1", "--switch-storage")
			crd := e.crd(windows)
			if w := stages.OpenWindow(crd); w == nil || !w.StepBack() {
				t.Fatalf("setup: after the kill, storage %s, records %+v: want the switch back open", stages.StorageVersion(crd), stages.Steps(crd))
			}
			st, code := e.statusNext(t)
			if code != 3 || st.Step == nil || st.Step.Op != lifecycle.OpMigrate || !strings.Contains(st.Reason, "switching storage from v1 to v1beta1 and before checking") {
				t.Errorf("status with the switch back unchecked: exit %d, next %+v: want exit 3 and migrate named to run the check", code, st)
			}
			r := e.plugin("migrate", windows, "--switch-grace=0")
			t.Logf("migrate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			crd = e.crd(windows)
			if w := stages.OpenWindow(crd); w != nil || len(stages.Steps(crd)) > 0 {
				t.Errorf("after migrate: window %+v, records %+v: want none", w, stages.Steps(crd))
			}
			if got := e.etcdHolding(t, "extra"); got != tc.held {
				t.Errorf("%d objects hold spec.extra in etcd, want %d", got, tc.held)
			}
			if tc.held > 0 {
				if r.code != 1 || stages.StorageVersion(crd) != "v1" || !strings.Contains(r.stderr, "switched back") {
					t.Errorf("exit %d, storage %s: want the unchecked switch back checked, found losing and undone (exit 1)\n%s", r.code, stages.StorageVersion(crd), r.stderr)
				}
				if rf := stages.SwitchBackRefusedFor(crd); rf == nil || rf.To != "v1beta1" || rf.Objects != int64(tc.held) || !slices.Equal(rf.Fields, []string{"spec.extra"}) {
					t.Errorf("the refused switch back's record: %+v, want %d objects losing spec.extra at v1beta1", rf, tc.held)
				}
				return
			}
			if r.code != 0 || stages.StorageVersion(crd) != "v1beta1" || fmt.Sprint(crd.Status.StoredVersions) != "[v1beta1]" {
				t.Errorf("exit %d, storage %s, storedVersions %v: want the switch back kept and the migration done", r.code, stages.StorageVersion(crd), crd.Status.StoredVersions)
			}
		})
	}
}
