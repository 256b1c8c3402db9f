package controller_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
)

const chartDir = "../../deploy/chart/crdversion-migrate"

// An operator's chart declares crdversion-migrate under dependencies and
// sets its values; Helm's own library renders the parent chart as an
// install would. The hooks are a ServiceAccount, its ClusterRole (the
// chart's API group only) and binding, then the Job, on post-upgrade; the
// Job's command, run as its pod would (no kubeconfig, that ServiceAccount's
// token mounted where every pod has it) against kube-apiserver (RBAC
// enforced), re-stores every object, prunes storedVersions and is refused
// nothing.
func TestChartAsADependency(t *testing.T) {
	e := newEnv(t)
	w := e.install("chart", func(*apiextensionsv1.CustomResourceDefinition) {}, objects(5, "chart-a", "chart-b"))
	e.switchStorage(w)

	hooks := renderParent(t, map[string]any{"crds": []string{w.name()}, "groups": []string{w.group}, "switchGrace": "0s"})
	var (
		sa      *corev1.ServiceAccount
		role    *rbacv1.ClusterRole
		binding *rbacv1.ClusterRoleBinding
		job     *batchv1.Job
	)
	weights := map[string]int{}
	for _, h := range hooks {
		if !slices.Contains(h.Events, release.HookPostUpgrade) || !slices.Contains(h.DeletePolicies, release.HookBeforeHookCreation) {
			t.Errorf("%s %s: events %v, delete policies %v", h.Kind, h.Name, h.Events, h.DeletePolicies)
		}
		weights[h.Kind] = h.Weight
		switch o := decodeStrict(t, h.Manifest).(type) {
		case *corev1.ServiceAccount:
			sa = o
		case *rbacv1.ClusterRole:
			role = o
		case *rbacv1.ClusterRoleBinding:
			binding = o
		case *batchv1.Job:
			job = o
		default:
			t.Errorf("an unexpected hook: %T", o)
		}
	}
	if sa == nil || role == nil || binding == nil || job == nil {
		t.Fatalf("hooks %v: want a ServiceAccount, a ClusterRole, a binding and a Job", weights)
	}
	for _, k := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding"} {
		if weights[k] >= weights["Job"] {
			t.Errorf("%s (weight %d) is not created before the Job (%d)", k, weights[k], weights["Job"])
		}
	}
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, "*") || (len(r.APIGroups) > 0 && !slices.Contains([]string{"apiextensions.k8s.io", w.group}, r.APIGroups[0])) {
			t.Errorf("the role reaches beyond the chart's group: %+v", r)
		}
	}
	pod := job.Spec.Template.Spec
	if pod.ServiceAccountName != sa.Name || binding.RoleRef.Name != role.Name || binding.Subjects[0].Name != sa.Name || sa.Namespace != job.Namespace {
		t.Errorf("the Job runs as %s/%s; the binding grants %s to %+v", job.Namespace, pod.ServiceAccountName, binding.RoleRef.Name, binding.Subjects)
	}
	c := pod.Containers[0]
	if !strings.HasPrefix(c.Image, "ghcr.io/kubectl-crdversion/kubectl-crdversion:v") || len(c.Command) != 1 {
		t.Errorf("the Job's image %s, command %v", c.Image, c.Command)
	}

	// The hook's objects on the cluster, then its command as its
	// ServiceAccount.
	if err := e.clients.EnsureNamespace(t.Context(), sa.Namespace); err != nil {
		t.Fatal(err)
	}
	e.create(sa)
	e.create(role)
	e.create(binding)
	tok, err := e.kube.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(t.Context(), sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := plugintest.Build(bin, "v0.0.0-chart"); err != nil {
		t.Fatal(err)
	}
	admin, err := e.c.RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	// The container's environment, HOME on the pod's emptyDir.
	var env []string
	for _, v := range c.Env {
		if v.Name == "HOME" {
			v.Value = t.TempDir()
		}
		env = append(env, v.Name+"="+v.Value)
	}
	r, err := plugintest.InPod(t.Context(), filepath.Join(bin, filepath.Base(c.Command[0])),
		plugintest.Pod{Server: admin.Host, Token: tok.Status.Token, Namespace: sa.Namespace, Env: env}, c.Args...)
	if errors.Is(err, plugintest.ErrNoMountNamespace) {
		t.Skip(err)
	}
	if err != nil || r.Code != 0 {
		t.Fatalf("the Job's command %v in the pod: %v, exit %d\n%s%s", c.Args, err, r.Code, r.Stdout, r.Stderr)
	}
	if strings.Contains(strings.ToLower(r.Stderr), "forbidden") {
		t.Errorf("the hook was refused something:\n%s", r.Stderr)
	}
	if !strings.Contains(r.Stdout, "(pruned)") {
		t.Errorf("the hook did not prune:\n%s", r.Stdout)
	}
	e.waitStoredVersions(w, "v1")
	if got := e.stored(w); got[w.group+"/v1"] != 10 || len(got) != 1 {
		t.Errorf("etcd holds %v, want every object at v1", got)
	}

	// A chart that names no group would grant nothing, or everything:
	// the render says so.
	if _, err := render(t, map[string]any{"crds": []string{w.name()}}); err == nil || !strings.Contains(err.Error(), "set groups") {
		t.Errorf("rendered without groups: %v", err)
	}
}

// renderParent renders a parent chart that depends on crdversion-migrate
// with values, and returns its hooks.
func renderParent(t *testing.T, values map[string]any) []*release.Hook {
	t.Helper()
	hooks, err := render(t, values)
	if err != nil {
		t.Fatal(err)
	}
	return hooks
}

func render(t *testing.T, values map[string]any) ([]*release.Hook, error) {
	t.Helper()
	abs, err := filepath.Abs(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	writeFile(t, filepath.Join(parent, "Chart.yaml"), "apiVersion: v2\nname: operator\nversion: 1.0.0\n"+
		"dependencies:\n- name: crdversion-migrate\n  version: 0.1.0\n  repository: file://"+abs+"\n")
	writeFile(t, filepath.Join(parent, "values.yaml"), "{}\n")
	// What helm dependency build leaves: the dependency in charts/.
	if err := os.CopyFS(filepath.Join(parent, "charts", "crdversion-migrate"), os.DirFS(abs)); err != nil {
		t.Fatal(err)
	}
	ch, err := loader.Load(parent)
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName, install.Namespace, install.Replace = "operator", "operator-system", true
	rel, err := install.Run(ch, map[string]any{"crdversion-migrate": values})
	if err != nil {
		return nil, err
	}
	return rel.(*release.Release).Hooks, nil
}

func decodeStrict(t *testing.T, manifest string) runtime.Object {
	t.Helper()
	obj, _, err := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer().Decode([]byte(manifest), nil, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, manifest)
	}
	return obj
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), fs.FileMode(0o644)); err != nil {
		t.Fatal(err)
	}
}
