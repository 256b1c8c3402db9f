package cluster

import (
	"context"
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fullsandbox"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
)

// env is a test's view of a cluster as its administrator.
type env struct {
	t       *testing.T
	c       *fullsandbox.Cluster
	config  *rest.Config
	kube    kubernetes.Interface
	clients fixtures.Clients
}

func newEnv(t *testing.T, c *fullsandbox.Cluster) *env {
	t.Helper()
	cfg, err := c.RestConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := fixtures.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, c: c, config: cfg, kube: kube, clients: clients}
}

// widgets is a test's own CRD: group <name>.test, kind Widget, v1beta1
// and v1 served, objects created at v1beta1 while it was the storage
// version, spread over the namespaces given.
type widgets struct {
	crd        *apiextensionsv1.CustomResourceDefinition
	group      string
	namespaces []string
	perNS      int
}

func (w widgets) name() string { return "widgets." + w.group }

func (w widgets) gvr(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: w.group, Version: version, Resource: "widgets"}
}

// installWidgets creates the CRD with v1beta1 as storage and perNS
// objects in each namespace, then (switch) makes v1 the storage version:
// every object is then stored at v1beta1 and storedVersions names both.
func (e *env) installWidgets(name string, perNS int, switchTo bool, namespaces ...string) widgets {
	e.t.Helper()
	return e.installWidgetsConverted(nil, name, perNS, switchTo, namespaces...)
}

// installWidgetsConverted is installWidgets with a conversion (a webhook).
func (e *env) installWidgetsConverted(conversion *apiextensionsv1.CustomResourceConversion, name string, perNS int, switchTo bool, namespaces ...string) widgets {
	e.t.Helper()
	ctx := e.t.Context()
	w := widgets{group: name + ".test", namespaces: namespaces, perNS: perNS}
	crd := fixtures.CRD(w.group, "Widget", "widgets", apiextensionsv1.NamespaceScoped, false,
		fixtures.Version{Name: "v1beta1", Served: true, Storage: true},
		fixtures.Version{Name: "v1", Served: true})
	crd.Spec.Conversion = conversion
	var err error
	if w.crd, err = e.clients.CreateCRD(ctx, crd); err != nil {
		e.t.Fatal(err)
	}
	var objs []fixtures.Object
	for _, ns := range namespaces {
		for i := range perNS {
			objs = append(objs, fixtures.Object{Namespace: ns, Name: fmt.Sprintf("w-%04d", i), Spec: map[string]any{"size": int64(i), "color": "blue"}})
		}
	}
	if err := e.clients.CreateObjects(ctx, w.gvr("v1beta1"), "Widget", objs); err != nil {
		e.t.Fatal(err)
	}
	if switchTo {
		if err := e.clients.SwitchStorage(ctx, w.name(), "v1", false); err != nil {
			e.t.Fatal(err)
		}
	}
	e.t.Cleanup(func() {
		_ = e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), w.name(), metav1.DeleteOptions{})
	})
	return w
}

// stored counts the CRD's etcd keys by the apiVersion they are stored at.
func (e *env) stored(w widgets) map[string]int {
	e.t.Helper()
	got, err := e.c.StoredAPIVersions(e.t.Context(), w.group, "widgets")
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func (e *env) crd(name string) *apiextensionsv1.CustomResourceDefinition {
	e.t.Helper()
	crd, err := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(e.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return crd
}

// plugin runs `kubectl crdversion ARGS` as the cluster's administrator.
func (e *env) plugin(args ...string) plugintest.Result {
	e.t.Helper()
	return e.pluginAs(e.c.Kubeconfig, args...)
}

// pluginAs runs `kubectl crdversion ARGS` with another kubeconfig.
func (e *env) pluginAs(kubeconfig string, args ...string) plugintest.Result {
	e.t.Helper()
	r, err := plugintest.Kubectl(e.t.Context(), kubeconfig, e.t.TempDir(), "", append([]string{"crdversion"}, args...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

var (
	mustCode = plugintest.MustCode
	contains = plugintest.Contains
)
