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
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
)

const chartDir = "../../deploy/chart/crdversion-migrate"

// An operator's chart declares crdversion-migrate under dependencies and
// sets its values; Helm's own library renders the parent chart as an
// install would. The hooks are a ServiceAccount, its ClusterRole (the
// named CRD and its resource only) and binding, then the Job, on
// post-upgrade; the Job's command, run as its pod would against
// kube-apiserver with exactly the rendered RBAC, re-stores every object,
// prunes storedVersions and is refused nothing. The API server's
// authorizer grants that ServiceAccount nothing of another CRD of the
// same group, and no subresource.
func TestChartAsADependency(t *testing.T) {
	e := newEnv(t)
	w := e.install("chart", func(*apiextensionsv1.CustomResourceDefinition) {}, objects(5, "chart-a", "chart-b"))
	e.switchStorage(w)

	h := decodeHooks(t, renderParent(t, map[string]any{"crds": []string{w.name()}, "groups": []string{w.group}, "switchGrace": "0s"}))
	for _, r := range h.role.Rules {
		if slices.Contains(r.APIGroups, "*") || (len(r.APIGroups) > 0 && !slices.Contains([]string{"apiextensions.k8s.io", w.group}, r.APIGroups[0])) {
			t.Errorf("the role reaches beyond the chart's group: %+v", r)
		}
	}
	c := h.job.Spec.Template.Spec.Containers[0]
	if !strings.HasPrefix(c.Image, "ghcr.io/kubectl-crdversion/kubectl-crdversion:v") || len(c.Command) != 1 {
		t.Errorf("the Job's image %s, command %v", c.Image, c.Command)
	}

	r := e.runHooks(h)
	if !strings.Contains(r.Stdout, "(pruned)") {
		t.Errorf("the hook did not prune:\n%s", r.Stdout)
	}
	e.waitStoredVersions(w, "v1")
	if got := e.stored(w); got[w.group+"/v1"] != 10 || len(got) != 1 {
		t.Errorf("etcd holds %v, want every object at v1", got)
	}

	// What the API server's authorizer grants the Job's ServiceAccount:
	// the named CRD and its resource, nothing of another CRD of the same
	// group, no subresource.
	sa := "system:serviceaccount:" + h.sa.Namespace + ":" + h.sa.Name
	for _, a := range []struct {
		attrs authorizationv1.ResourceAttributes
		want  bool
	}{
		{authorizationv1.ResourceAttributes{Verb: "patch", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: w.name()}, true},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Subresource: "status", Name: w.name()}, true},
		{authorizationv1.ResourceAttributes{Verb: "patch", Group: w.group, Resource: "widgets", Namespace: "chart-a", Name: "w-0000"}, true},
		{authorizationv1.ResourceAttributes{Verb: "patch", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "gadgets.chart.test"}, false},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Subresource: "status", Name: "gadgets.chart.test"}, false},
		{authorizationv1.ResourceAttributes{Verb: "patch", Group: w.group, Resource: "gadgets"}, false},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: w.group, Resource: "widgets", Subresource: "status"}, false},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: w.group, Resource: "widgets", Subresource: "scale"}, false},
	} {
		if got := e.allowed(sa, a.attrs); got != a.want {
			t.Errorf("%s may %s %s/%s (%s) %s: %v, want %v", sa, a.attrs.Verb, a.attrs.Resource, a.attrs.Subresource, a.attrs.Group, a.attrs.Name, got, a.want)
		}
	}
}

// all: true with groups: the Job migrates every pending CRD of those
// groups, and leaves a pending CRD of another group alone (the role grants
// none of its objects: before the group filter, its 403 failed the hook
// and with it the parent chart's helm upgrade). switchGrace 0, a YAML
// integer, reaches migrate: the run waits no grace.
func TestChartAllWithinGroups(t *testing.T) {
	e := newEnv(t)
	mine := e.install("chartall", func(*apiextensionsv1.CustomResourceDefinition) {}, objects(5, "chartall-a"))
	theirs := e.install("chartother", func(*apiextensionsv1.CustomResourceDefinition) {}, objects(3, "chartother-a"))
	e.switchStorage(mine)
	e.switchStorage(theirs)

	h := decodeHooks(t, renderParent(t, map[string]any{"all": true, "groups": []string{mine.group}, "switchGrace": 0}))
	c := h.job.Spec.Template.Spec.Containers[0]
	if want := []string{"migrate", "--all", "--group=" + mine.group, "--switch-grace=0s"}; !slices.Equal(c.Args, want) {
		t.Errorf("the Job's args %q, want %q", c.Args, want)
	}
	r := e.runHooks(h)
	plugintest.Contains(t, "the Job's migrate --all", r.Stdout, mine.name(), "(pruned)")
	if strings.Contains(r.Stdout+r.Stderr, theirs.name()) {
		t.Errorf("the Job reached another group's CRD:\n%s%s", r.Stdout, r.Stderr)
	}
	e.waitStoredVersions(mine, "v1")
	if got := e.stored(mine); got[mine.group+"/v1"] != 5 || len(got) != 1 {
		t.Errorf("etcd holds %v of the chart's CRD, want every object at v1", got)
	}
	if got := e.crd(theirs).Status.StoredVersions; !slices.Equal(got, []string{"v1beta1", "v1"}) {
		t.Errorf("the other group's storedVersions %v: touched", got)
	}
	if got := e.stored(theirs); got[theirs.group+"/v1beta1"] != 3 {
		t.Errorf("etcd holds %v of the other group's CRD, want it untouched", got)
	}
}

// hooks are the chart's rendered hooks, decoded strictly.
type hooks struct {
	sa      *corev1.ServiceAccount
	role    *rbacv1.ClusterRole
	binding *rbacv1.ClusterRoleBinding
	job     *batchv1.Job
}

// decodeHooks decodes the four hooks and checks what ties them: post-
// upgrade, deleted before the next, RBAC before the Job, the Job's
// ServiceAccount the one bound.
func decodeHooks(t *testing.T, rendered []*release.Hook) hooks {
	t.Helper()
	var h hooks
	weights := map[string]int{}
	for _, r := range rendered {
		if !slices.Contains(r.Events, release.HookPostUpgrade) || !slices.Contains(r.DeletePolicies, release.HookBeforeHookCreation) {
			t.Errorf("%s %s: events %v, delete policies %v", r.Kind, r.Name, r.Events, r.DeletePolicies)
		}
		weights[r.Kind] = r.Weight
		switch o := decodeStrict(t, r.Manifest).(type) {
		case *corev1.ServiceAccount:
			h.sa = o
		case *rbacv1.ClusterRole:
			h.role = o
		case *rbacv1.ClusterRoleBinding:
			h.binding = o
		case *batchv1.Job:
			h.job = o
		default:
			t.Errorf("an unexpected hook: %T", o)
		}
	}
	if h.sa == nil || h.role == nil || h.binding == nil || h.job == nil {
		t.Fatalf("hooks %v: want a ServiceAccount, a ClusterRole, a binding and a Job", weights)
	}
	for _, k := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding"} {
		if weights[k] >= weights["Job"] {
			t.Errorf("%s (weight %d) is not created before the Job (%d)", k, weights[k], weights["Job"])
		}
	}
	pod := h.job.Spec.Template.Spec
	if pod.ServiceAccountName != h.sa.Name || h.binding.RoleRef.Name != h.role.Name || h.binding.Subjects[0].Name != h.sa.Name || h.sa.Namespace != h.job.Namespace {
		t.Errorf("the Job runs as %s/%s; the binding grants %s to %+v", h.job.Namespace, pod.ServiceAccountName, h.binding.RoleRef.Name, h.binding.Subjects)
	}
	return h
}

// runHooks creates the hook's ServiceAccount and exactly its rendered
// RBAC, then runs the Job's command as its pod would (no kubeconfig, that
// ServiceAccount's token mounted where every pod has it) against
// kube-apiserver, and wants exit 0 and nothing refused.
func (e *env) runHooks(h hooks) plugintest.Result {
	t := e.t
	t.Helper()
	if err := e.clients.EnsureNamespace(t.Context(), h.sa.Namespace); err != nil {
		t.Fatal(err)
	}
	e.create(h.sa)
	e.create(h.role)
	e.create(h.binding)
	tok, err := e.kube.CoreV1().ServiceAccounts(h.sa.Namespace).CreateToken(t.Context(), h.sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
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
	c := h.job.Spec.Template.Spec.Containers[0]
	// The container's environment, HOME on the pod's emptyDir.
	var env []string
	for _, v := range c.Env {
		if v.Name == "HOME" {
			v.Value = t.TempDir()
		}
		env = append(env, v.Name+"="+v.Value)
	}
	r, err := plugintest.InPod(t.Context(), filepath.Join(bin, filepath.Base(c.Command[0])),
		plugintest.Pod{Server: admin.Host, Token: tok.Status.Token, Namespace: h.sa.Namespace, Env: env}, c.Args...)
	if errors.Is(err, plugintest.ErrNoMountNamespace) {
		t.Skip(err)
	}
	if err != nil || r.Code != 0 {
		t.Fatalf("the Job's command %v in the pod: %v, exit %d\n%s%s", c.Args, err, r.Code, r.Stdout, r.Stderr)
	}
	if strings.Contains(strings.ToLower(r.Stderr), "forbidden") {
		t.Errorf("the hook was refused something:\n%s", r.Stderr)
	}
	return r
}

// allowed asks the API server's authorizer whether user may do what attrs
// say.
func (e *env) allowed(user string, attrs authorizationv1.ResourceAttributes) bool {
	e.t.Helper()
	r, err := e.kube.AuthorizationV1().SubjectAccessReviews().Create(e.t.Context(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:authenticated"}, ResourceAttributes: &attrs},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Status.Allowed
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
	return renderAs(t, chartDir, "operator", "operator-system", values)
}

// renderAs renders the chart in dir as a dependency of a parent chart
// installed as release in namespace.
func renderAs(t *testing.T, dir, releaseName, namespace string, values map[string]any) ([]*release.Hook, error) {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	writeFile(t, filepath.Join(parent, "Chart.yaml"), "apiVersion: v2\nname: operator\nversion: 1.0.0\n"+
		"dependencies:\n- name: crdversion-migrate\n  version: 0.1.0\n  repository: file://"+abs+"\n")
	// The values as the parent's values.yaml holds them: what a values
	// file gives Helm (numbers, lists of anything) is what its schema
	// judges.
	parentValues, err := yaml.Marshal(map[string]any{"crdversion-migrate": values})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(parent, "values.yaml"), string(parentValues))
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
	install.ReleaseName, install.Namespace, install.Replace = releaseName, namespace, true
	rel, err := install.Run(ch, nil)
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
