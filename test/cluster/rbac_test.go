package cluster

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
)

// Each ClusterRole of deploy/rbac, bound to a ServiceAccount: what it is
// for works; what it is not for fails with one error line that names the
// missing permissions, and nothing is written.
func TestRolesAllowTheirCommandsAndNoMore(t *testing.T) {
	e := newEnv(t, shared)
	w := e.installWidgets("rbac", 10, true, "rbac-a", "rbac-b")
	as := map[string]string{}
	for _, role := range []string{"crdversion-view", "crdversion-verify", "crdversion-check", "crdversion-migrate", "crdversion-promote"} {
		e.applyRole(role, w.group)
		sa := strings.TrimPrefix(role, "crdversion-")
		as[role], _ = e.serviceAccount("rbac-users", sa)
		e.bindClusterRole(role, "rbac-users", sa)
	}
	untouched := func(t *testing.T, r plugintest.Result, wants ...string) {
		t.Helper()
		mustCode(t, r, 1)
		if lines := strings.Split(strings.TrimSpace(r.Stderr), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") {
			t.Errorf("want one error line on stderr, got:\n%s", r.Stderr)
		}
		contains(t, "the refusal", r.Stderr, wants...)
		if got := e.stored(w); got[w.group+"/v1beta1"] != 20 {
			t.Errorf("etcd changed: %v", got)
		}
		if got := e.crd(w.name()).Status.StoredVersions; !slices.Equal(got, []string{"v1beta1", "v1"}) {
			t.Errorf("storedVersions changed: %v", got)
		}
	}

	t.Run("view", func(t *testing.T) {
		mustCode(t, e.pluginAs(as["crdversion-view"], "status", w.name()), 0)
		untouched(t, e.pluginAs(as["crdversion-view"], "migrate", w.name(), "--switch-grace=0s"),
			"you may not migrate "+w.name(), "update customresourcedefinitions/status (apiextensions.k8s.io) "+w.name(), "patch widgets ("+w.group+")")
		untouched(t, e.pluginAs(as["crdversion-view"], "verify", w.name()),
			"you may not check old→new→old on "+w.name(), "update widgets ("+w.group+")")
	})
	t.Run("check", func(t *testing.T) {
		manifest := e.manifestOf(w.name())
		r := e.pluginAs(as["crdversion-check"], "check", "-f", manifest)
		if r.Code != 0 && r.Code != 3 {
			t.Fatalf("check as crdversion-check: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		untouched(t, e.pluginAs(as["crdversion-view"], "check", "-f", manifest),
			"you may not check the upgrade of "+w.name(), "update customresourcedefinitions (apiextensions.k8s.io) "+w.name())
	})
	t.Run("verify", func(t *testing.T) {
		r := mustCode(t, e.pluginAs(as["crdversion-verify"], "verify", w.name()), 0)
		contains(t, "verify", r.Stdout, "without loss")
		untouched(t, e.pluginAs(as["crdversion-verify"], "migrate", w.name(), "--switch-grace=0s"),
			"update customresourcedefinitions/status")
	})
	t.Run("promote", func(t *testing.T) {
		untouched(t, e.pluginAs(as["crdversion-promote"], "migrate", w.name(), "--switch-grace=0s"),
			"update customresourcedefinitions/status")
	})
	t.Run("migrate", func(t *testing.T) {
		untouched(t, e.pluginAs(as["crdversion-migrate"], "promote", w.name(), "--to", "deprecated"),
			"you may not promote "+w.name(), "update customresourcedefinitions (apiextensions.k8s.io) "+w.name())
		mustCode(t, e.pluginAs(as["crdversion-migrate"], "migrate", w.name(), "--switch-grace=0s"), 0)
		if got, want := e.stored(w), map[string]int{w.group + "/v1": 20}; !maps.Equal(got, want) {
			t.Errorf("etcd holds %v, want %v", got, want)
		}
		if got := e.crd(w.name()).Status.StoredVersions; !slices.Equal(got, []string{"v1"}) {
			t.Errorf("storedVersions %v, want [v1]", got)
		}
	})
}

// A user who may write the objects of some namespaces only: every object
// of the others is reported as forbidden, nothing is pruned, exit 3; the
// objects it may write are re-stored.
func TestMigrateWithForbiddenNamespaces(t *testing.T) {
	e := newEnv(t, shared)
	w := e.installWidgets("partial", 5, true, "partial-a", "partial-b")
	kubeconfig, _ := e.serviceAccount("partial-users", "ops")
	// Everything crdversion-migrate allows except writing objects, across
	// the cluster; writing objects in partial-a only.
	crdsOnly := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "test-partial-crds"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "patch"}},
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions/status"}, Verbs: []string{"update"}},
			{APIGroups: []string{w.group}, Resources: []string{"widgets"}, Verbs: []string{"get", "list"}},
		},
	}
	writer := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "test-partial-writer"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{w.group}, Resources: []string{"widgets"}, Verbs: []string{"patch"}}},
	}
	for _, r := range []*rbacv1.ClusterRole{crdsOnly, writer} {
		if _, err := e.kube.RbacV1().ClusterRoles().Create(t.Context(), r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.bindClusterRole(crdsOnly.Name, "partial-users", "ops")
	e.bind(nil, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ops-writes", Namespace: "partial-a"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: writer.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "partial-users", Name: "ops"}},
	})

	r := mustCode(t, e.pluginAs(kubeconfig, "migrate", w.name(), "--switch-grace=0s"), 3)
	contains(t, "migrate stderr", r.Stderr, "you may not patch widgets ("+w.group+") in every namespace")
	contains(t, "migrate stdout", r.Stdout, "5 re-stored", "5 failed", "not pruned")
	for i := range 5 {
		contains(t, "failures", r.Stdout, fmt.Sprintf("partial-b/w-%04d   403", i))
	}
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 5, w.group + "/v1beta1": 5}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v, want %v", got, want)
	}
	if got := e.crd(w.name()).Status.StoredVersions; !slices.Equal(got, []string{"v1beta1", "v1"}) {
		t.Errorf("storedVersions %v, want both (nothing pruned)", got)
	}
}

// deploy/job/migrate-all.yaml, applied as it is (with crdversion-migrate
// naming the test's group): its ServiceAccount runs the Job's command and
// migrates. No kubelet runs here, so the command runs beside the cluster
// with the ServiceAccount's token, as the pod would.
func TestMigrateJobManifest(t *testing.T) {
	e := newEnv(t, shared)
	w := e.installWidgets("job", 10, true, "job-a")
	e.applyRole("crdversion-migrate", w.group)
	e.applyFile(filepath.Join("..", "..", "deploy", "job", "migrate-all.yaml"))
	job, err := e.kube.BatchV1().Jobs("crdversion").Get(t.Context(), "crdversion-migrate-all", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := job.Spec.Template.Spec
	kubeconfig := e.tokenFor(pod.ServiceAccountName, "crdversion")
	e.waitBound("crdversion", pod.ServiceAccountName)
	// The storage switch here is seconds old: the grace it would wait out
	// is tested elsewhere.
	args := append(pod.Containers[0].Args, "--switch-grace=0s")
	r := mustCode(t, e.pluginAs(kubeconfig, args...), 0)
	contains(t, "the Job's migrate --all", r.Stdout, w.name(), "(pruned)")
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 10}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v, want %v", got, want)
	}
}

// manifestOf writes the live CRD as a manifest, as a repository holds it.
func (e *env) manifestOf(name string) string {
	e.t.Helper()
	return e.manifestWith(name, func(*apiextensionsv1.CustomResourceDefinition) {})
}

// manifestWith writes the live CRD, changed by edit, as a manifest: the
// next release of a repository.
func (e *env) manifestWith(name string, edit func(*apiextensionsv1.CustomResourceDefinition)) string {
	e.t.Helper()
	crd := e.crd(name)
	edit(crd)
	crd.TypeMeta = metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}
	crd.ObjectMeta = metav1.ObjectMeta{Name: crd.Name}
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	b, err := yaml.Marshal(crd)
	if err != nil {
		e.t.Fatal(err)
	}
	path := filepath.Join(e.t.TempDir(), "crd.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return path
}
