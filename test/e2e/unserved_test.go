package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/convwebhook"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// shipUnserved installs what well-known projects ship between "stop
// serving" and "remove": a CRD whose old versions v1alpha1 and v1beta1 are
// not served but still in storedVersions, objects stored at each (n at
// each), v1 the storage version, conversion by a webhook.
func (e *env) shipUnserved(t *testing.T, kind, plural string, n int, wh *convwebhook.Webhook) string {
	t.Helper()
	crd := fixtures.CRD("ship.example.com", kind, plural, apiextensionsv1.NamespaceScoped, true,
		fixtures.Version{Name: "v1", Served: true},
		fixtures.Version{Name: "v1beta1", Served: true},
		fixtures.Version{Name: "v1alpha1", Served: true, Storage: true})
	crd.Spec.Conversion = wh.Conversion()
	if _, err := e.clients.CreateCRD(t.Context(), crd); err != nil {
		t.Fatal(err)
	}
	objs := func(prefix string) []fixtures.Object {
		out := make([]fixtures.Object, n)
		for i := range out {
			out[i] = fixtures.Object{Namespace: "ns-0", Name: fmt.Sprintf("%s-%d", prefix, i), Spec: map[string]any{"hostPort": fmt.Sprintf("h:%d", i)}}
		}
		return out
	}
	gvr := func(v string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "ship.example.com", Version: v, Resource: plural}
	}
	if err := e.clients.CreateObjects(t.Context(), gvr("v1alpha1"), kind, objs("a")); err != nil {
		t.Fatal(err)
	}
	if err := e.clients.SwitchStorageInEffect(t.Context(), crd.Name, "v1beta1"); err != nil {
		t.Fatal(err)
	}
	if err := e.clients.CreateObjects(t.Context(), gvr("v1beta1"), kind, objs("b")); err != nil {
		t.Fatal(err)
	}
	crds := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	live, err := crds.Get(t.Context(), crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range live.Spec.Versions {
		v := &live.Spec.Versions[i]
		v.Storage, v.Served = v.Name == "v1", v.Name == "v1"
	}
	if _, err := crds.Update(t.Context(), live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return crd.Name
}

// From the state real projects ship with old versions unserved, and from a
// CRD with no objects, following the tool's own next step leads to done:
// every object re-stored at v1, storedVersions pruned, the old versions
// removed; etcd holds nothing at another version.
func TestUnservedOldVersionsLeadToDone(t *testing.T) {
	e := newEnv(t, 0)
	wh, err := convwebhook.Start(convwebhook.Correct)
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Stop()
	for _, tc := range []struct {
		kind, plural string
		n            int
	}{{"Route", "routes", 5}, {"EmptyRoute", "emptyroutes", 0}} {
		t.Run(tc.plural, func(t *testing.T) {
			name := e.shipUnserved(t, tc.kind, tc.plural, tc.n, wh)
			if sv := e.crd(name).Status.StoredVersions; !slices.Contains(sv, "v1alpha1") || !slices.Contains(sv, "v1beta1") {
				t.Fatalf("setup: storedVersions %v", sv)
			}
			var steps []string
			for range 6 {
				st := e.plugin("status", name, "-o", "json").mustCode(t, 0)
				var doc report.StatusReport
				if err := json.Unmarshal([]byte(st.stdout), &doc); err != nil || len(doc.Items) != 1 {
					t.Fatalf("status -o json: %v\n%s", err, st.stdout)
				}
				next := doc.Items[0].Next
				if next.Command == "" {
					break
				}
				steps = append(steps, next.Command)
				args := strings.Fields(strings.TrimPrefix(next.Command, "kubectl crdversion "))
				// A short grace: nothing is in flight across these switches.
				if args[0] == "migrate" {
					args = append(args, "--switch-grace=1s")
				}
				r := e.plugin(args...)
				t.Logf("%s:\n%s%s", next.Command, r.stdout, r.stderr)
				if r.code != 0 {
					t.Fatalf("step %q: exit %d\nstdout:\n%s\nstderr:\n%s", next.Command, r.code, r.stdout, r.stderr)
				}
			}
			crd := e.crd(name)
			if len(crd.Spec.Versions) != 1 || fmt.Sprint(crd.Status.StoredVersions) != "[v1]" {
				t.Fatalf("after %q: versions %d, storedVersions %v: want v1 alone", steps, len(crd.Spec.Versions), crd.Status.StoredVersions)
			}
			if c, err := e.sb.StoredAPIVersions(t.Context(), "ship.example.com", tc.plural); err != nil || c["ship.example.com/v1"] != 2*tc.n || len(c) > 1 {
				t.Errorf("etcd after %q: %v %v", steps, c, err)
			}
		})
	}
}

// A CRD whose storedVersions names only the storage version has nothing
// that a write begun before a switch could land beside: an annotation on it
// or a managedFields cleanup does not make migrate wait out a grace.
func TestMigrateDoesNotWaitWithNothingPending(t *testing.T) {
	e := newEnv(t, demoObjects)
	e.kubectl("annotate", "crd", "clusterpolicies.policy.example.com", "touched=yes").mustCode(t, 0)
	r := e.plugin("migrate", "clusterpolicies.policy.example.com", "--clean-managed-fields").mustCode(t, 0)
	if strings.Contains(r.stderr, "waiting") {
		t.Errorf("migrate waited on a CRD with nothing pending:\n%s", r.stderr)
	}
	contains(t, "migrate with nothing pending", r.stdout, "storedVersions already holds only the storage version")
}

// Objects keep managedFields entries of a version after it stops being
// served, though storedVersions is clean by then: --all with
// --clean-managed-fields finds them in the objects, not in the CRD.
func TestMigrateAllCleansManagedFieldsWithNothingPending(t *testing.T) {
	e := newEnv(t, demoObjects)
	const certs = "certificates.pki.example.com"
	e.plugin("migrate", certs, "--switch-grace=1s", "-q").mustCode(t, 0)
	// --despite-clients: the deprecated-API metric is shared by this
	// binary's API servers, and other tests read v1alpha2.
	e.plugin("promote", certs, "v1", "--to", "blocked", "--despite-clients=requests").mustCode(t, 0)
	if sv := e.crd(certs).Status.StoredVersions; fmt.Sprint(sv) != "[v1]" {
		t.Fatalf("setup: storedVersions %v", sv)
	}
	r := e.plugin("migrate", "--all", "--clean-managed-fields", "--switch-grace=1s", "-q").mustCode(t, 0)
	contains(t, "migrate --all --clean-managed-fields", r.stdout, certs, "cleaned of entries at unserved versions")
	again := e.plugin("migrate", "--all", "--clean-managed-fields", "-q").mustCode(t, 0)
	contains(t, "a second run", again.stderr, "No CustomResourceDefinitions with a migration pending or managedFields entries of unserved versions.")
}
