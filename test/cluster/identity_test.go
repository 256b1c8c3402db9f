package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
)

// serviceAccount creates a ServiceAccount and returns a kubeconfig that
// authenticates as it, with a token from the TokenRequest API, as a Job's
// pod would.
func (e *env) serviceAccount(namespace, name string) (kubeconfig, user string) {
	e.t.Helper()
	ctx := e.t.Context()
	if err := e.clients.EnsureNamespace(ctx, namespace); err != nil {
		e.t.Fatal(err)
	}
	_, err := e.kube.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return e.tokenFor(name, namespace), "system:serviceaccount:" + namespace + ":" + name
}

// tokenFor returns a kubeconfig with a token of an existing
// ServiceAccount, from the TokenRequest API.
func (e *env) tokenFor(name, namespace string) string {
	e.t.Helper()
	tok, err := e.kube.CoreV1().ServiceAccounts(namespace).CreateToken(e.t.Context(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	admin, err := clientcmd.LoadFromFile(e.c.Kubeconfig)
	if err != nil {
		e.t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "sa", Namespace: namespace}
	kc.CurrentContext = "sa"
	path := filepath.Join(e.t.TempDir(), "kubeconfig-"+name)
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		e.t.Fatal(err)
	}
	return path
}

// bindClusterRole binds a ClusterRole to the user across the cluster.
func (e *env) bindClusterRole(role, namespace, sa string) {
	e.t.Helper()
	e.bind(&rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role + "-" + namespace + "-" + sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: sa}},
	}, nil)
}

// bind creates a ClusterRoleBinding or a RoleBinding, removes it when the
// test ends, and waits until the authorizer grants its ServiceAccounts
// what they are bound to.
func (e *env) bind(crb *rbacv1.ClusterRoleBinding, rb *rbacv1.RoleBinding) {
	e.t.Helper()
	ctx := e.t.Context()
	var (
		err      error
		subjects []rbacv1.Subject
	)
	if crb != nil {
		_, err = e.kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
		e.t.Cleanup(func() {
			_ = e.kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
		})
		subjects = crb.Subjects
	} else {
		_, err = e.kube.RbacV1().RoleBindings(rb.Namespace).Create(ctx, rb, metav1.CreateOptions{})
		subjects = rb.Subjects
	}
	if err != nil {
		e.t.Fatal(err)
	}
	for _, s := range subjects {
		if s.Kind == rbacv1.ServiceAccountKind {
			e.waitBound(s.Namespace, s.Name)
		}
	}
}

// applyRole applies a ClusterRole of deploy/rbac as its README says to:
// with the placeholder API group replaced by the groups of one's CRDs.
func (e *env) applyRole(role, group string) {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "rbac", role+".yaml"))
	if err != nil {
		e.t.Fatal(err)
	}
	path := filepath.Join(e.t.TempDir(), role+".yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(b), `"example.com"`, `"`+group+`"`)), 0o644); err != nil {
		e.t.Fatal(err)
	}
	e.applyFile(path)
}

// applyFile applies a manifest as the administrator, as a user would.
func (e *env) applyFile(path string) {
	e.t.Helper()
	r, err := plugintest.Kubectl(e.t.Context(), e.c.Kubeconfig, e.t.TempDir(), "", "apply", "--server-side", "--force-conflicts", "-f", path)
	if err != nil || r.Code != 0 {
		e.t.Fatalf("kubectl apply -f %s: %v\n%s%s", path, err, r.Stdout, r.Stderr)
	}
}
