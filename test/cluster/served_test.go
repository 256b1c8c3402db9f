package cluster

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fullsandbox"
)

// Two kube-apiservers on one etcd behind a load balancer: promote
// introduces v2 through one of them, and the other learns of the update
// through its watch a moment later. promote returns once v2 is served, so
// right after it a request at v2 on either server finds the objects, and
// the next step (bridge, which lists them at v2) can follow at once.
func TestIntroducedIsServedWhenPromoteReturns(t *testing.T) {
	ha := fullsandbox.StartBalancedT(t, 2)
	e := newEnv(t, ha.Servers[0])
	var direct []dynamic.Interface
	for _, s := range ha.Servers {
		cfg, err := s.RestConfig()
		if err != nil {
			t.Fatal(err)
		}
		d, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		direct = append(direct, d)
	}
	for round, group := range []string{"served-a", "served-b", "served-c"} {
		w := e.installWidgets(group, 5, false, group+"-ns")
		manifest := e.manifestWith(w.name(), func(crd *apiextensionsv1.CustomResourceDefinition) {
			v2 := *crd.Spec.Versions[1].DeepCopy()
			v2.Name = "v2"
			crd.Spec.Versions = append(crd.Spec.Versions, v2)
		})
		mustCode(t, e.pluginAs(ha.Kubeconfig, "promote", w.name(), "v2", "--from-file", manifest), 0)
		for i, d := range direct {
			list, err := d.Resource(w.gvr("v2")).Namespace(w.namespaces[0]).List(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatalf("round %d: a list at v2 on server %d right after promote returned: %v", round, i+1, err)
			}
			if len(list.Items) != w.perNS {
				t.Fatalf("round %d: server %d lists %d objects at v2, want %d", round, i+1, len(list.Items), w.perNS)
			}
		}
		mustCode(t, e.pluginAs(ha.Kubeconfig, "promote", w.name(), "v2"), 0)
	}
}
