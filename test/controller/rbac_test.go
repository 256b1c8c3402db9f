package controller_test

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// The operator runs as a ServiceAccount granted the rules docs/controller.md
// lists, but for the prune's write: the Migrator's migration is refused
// before anything is written, a MigrationFailed Event says which
// permission is missing, and it is tried again after a backoff, with no
// change to the CRD. Once the role grants it, a retry migrates and prunes.
func TestDocumentedRoleAndBackoff(t *testing.T) {
	e := newEnv(t)
	w := e.install("ctrlrbac", func(*apiextensionsv1.CustomResourceDefinition) {}, objects(10, "ctrlrbac-a"))
	e.switchStorage(w)
	rules := documentedRules(t, w.group)
	prune := func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "customresourcedefinitions/status")
	}
	if !slices.ContainsFunc(rules, prune) {
		t.Fatalf("docs/controller.md grants no write of customresourcedefinitions/status: %+v", rules)
	}
	role := e.create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-ctrlrbac"}, Rules: slices.DeleteFunc(slices.Clone(rules), prune)}).(*rbacv1.ClusterRole)
	cfg := e.operatorIdentity("ctrlrbac-system", "operator", role.Name)
	opts := options(w)
	opts.MaxBackoff = time.Second
	r := e.startReplicaAs(cfg, "operator", "ctrlrbac-test", opts)

	ev := e.waitEvent(w, "MigrationFailed")
	if want := "update customresourcedefinitions/status"; !strings.Contains(ev.Note, want) {
		t.Errorf("the MigrationFailed Event %q lacks %q", ev.Note, want)
	}
	waitLines(t, r, 2, "migration failed; trying again after a backoff", w.name())
	if got, want := e.stored(w), map[string]int{w.group + "/v1beta1": 10}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v after the refusals, want %v", got, want)
	}

	role.Rules = rules
	if _, err := e.kube.RbacV1().ClusterRoles().Update(t.Context(), role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitStoredVersions(w, "v1")
	if got, want := e.stored(w), map[string]int{w.group + "/v1": 10}; !maps.Equal(got, want) {
		t.Errorf("etcd holds %v, want %v", got, want)
	}
}

// documentedRules are the rules of the YAML block under docs/controller.md's
// "RBAC", with its placeholder group replaced by group.
func documentedRules(t *testing.T, group string) []rbacv1.PolicyRule {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "controller.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := bytes.Cut(doc, []byte("\n## RBAC\n"))
	_, block, ok := bytes.Cut(section, []byte("```yaml\n"))
	block, _, closed := bytes.Cut(block, []byte("```"))
	if !ok || !closed {
		t.Fatal("docs/controller.md: no yaml block under ## RBAC")
	}
	var rules []rbacv1.PolicyRule
	if err := yaml.UnmarshalStrict(bytes.ReplaceAll(block, []byte(`"example.com"`), []byte(`"`+group+`"`)), &rules); err != nil {
		t.Fatalf("docs/controller.md's rules: %v", err)
	}
	return rules
}

// operatorIdentity is a ServiceAccount bound to the ClusterRole, with the
// manager's own Lease in default, as a client config holding its token.
func (e *env) operatorIdentity(namespace, name, role string) *rest.Config {
	e.t.Helper()
	if err := e.clients.EnsureNamespace(e.t.Context(), namespace); err != nil {
		e.t.Fatal(err)
	}
	e.create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}})
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}}
	e.create(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}})
	e.create(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role + "-lease", Namespace: metav1.NamespaceDefault},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}}}})
	e.create(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role + "-lease", Namespace: metav1.NamespaceDefault}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role + "-lease"}})
	tok, err := e.kube.CoreV1().ServiceAccounts(namespace).CreateToken(e.t.Context(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	admin, err := e.c.RestConfig()
	if err != nil {
		e.t.Fatal(err)
	}
	return &rest.Config{Host: admin.Host, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData, ServerName: admin.ServerName}, BearerToken: tok.Status.Token}
}

// create creates an RBAC object or a ServiceAccount as the administrator,
// and deletes it when the test ends.
func (e *env) create(obj any) any {
	e.t.Helper()
	ctx, rbac := e.t.Context(), e.kube.RbacV1()
	var (
		got any
		err error
		del func(context.Context) error
	)
	switch o := obj.(type) {
	case *rbacv1.ClusterRole:
		got, err = rbac.ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		del = func(ctx context.Context) error {
			return rbac.ClusterRoles().Delete(ctx, o.Name, metav1.DeleteOptions{})
		}
	case *rbacv1.ClusterRoleBinding:
		got, err = rbac.ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		del = func(ctx context.Context) error {
			return rbac.ClusterRoleBindings().Delete(ctx, o.Name, metav1.DeleteOptions{})
		}
	case *rbacv1.Role:
		got, err = rbac.Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		del = func(ctx context.Context) error {
			return rbac.Roles(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{})
		}
	case *rbacv1.RoleBinding:
		got, err = rbac.RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		del = func(ctx context.Context) error {
			return rbac.RoleBindings(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{})
		}
	case *corev1.ServiceAccount:
		got, err = e.kube.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		del = func(ctx context.Context) error {
			return e.kube.CoreV1().ServiceAccounts(o.Namespace).Delete(ctx, o.Name, metav1.DeleteOptions{})
		}
	default:
		e.t.Fatalf("create: %T", obj)
	}
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = del(context.Background()) })
	return got
}
