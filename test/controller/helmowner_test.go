package controller_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/plugintest"
)

// A chart that ships its CRD in templates/ owns it through Helm: Helm 4's
// server-side apply, or Helm 3's three-way patch from the last release's
// manifest (ServerSideApply false). The plugin steps the live CRD to
// deprecated (v1 becomes the storage version: spec.versions, an atomic
// list, edited) and the chart's owner makes the same steps in the chart
// (promote -f on its template); Helm's upgrade, run
// by Helm's own library against kube-apiserver, meets no conflict with the
// plugin and leaves the CRD as the chart says.
func TestHelmUpgradesAfterThePluginsStep(t *testing.T) {
	bin := t.TempDir()
	if err := plugintest.Build(bin, "v0.0.0-helm"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		ssa  bool
	}{{"server-side", true}, {"three-way", false}} {
		t.Run(mode.name, func(t *testing.T) {
			e := newEnv(t)
			group := "helm-" + mode.name + ".test"
			crd := "widgets." + group
			chart := t.TempDir()
			writeFile(t, filepath.Join(chart, "Chart.yaml"), "apiVersion: v2\nname: widgets\nversion: 1.0.0\n")
			template := filepath.Join(chart, "templates", "crd.yaml")
			writeFile(t, template, widgetsCRD(group))

			cfg := &action.Configuration{}
			getter := genericclioptions.NewConfigFlags(false)
			ns := "default"
			getter.KubeConfig, getter.Namespace = &e.c.Kubeconfig, &ns
			if err := cfg.Init(getter, ns, "secret"); err != nil {
				t.Fatal(err)
			}
			install := action.NewInstall(cfg)
			install.ReleaseName, install.Namespace, install.ServerSideApply = "widgets-"+mode.name, ns, mode.ssa
			install.WaitStrategy = kube.HookOnlyStrategy
			ch, err := loader.Load(chart)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := install.Run(ch, nil); err != nil {
				t.Fatalf("helm install: %v", err)
			}

			plugin := func(args ...string) {
				t.Helper()
				cmd := exec.CommandContext(t.Context(), filepath.Join(bin, "kubectl-crdversion"), args...)
				cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG="+e.c.Kubeconfig)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("kubectl crdversion %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
			storage := func() string {
				t.Helper()
				live, err := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), crd, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range live.Spec.Versions {
					if v.Storage {
						return v.Name
					}
				}
				return ""
			}
			plugin("promote", crd, "v1") // bridge: a record of the round trip
			plugin("promote", crd, "v1") // deprecated: v1 stores, spec.versions edited
			if got := storage(); got != "v1" {
				t.Fatalf("the plugin's step left %s the storage version, want v1", got)
			}
			plugin("promote", "-f", template, crd, "v1")
			plugin("promote", "-f", template, crd, "v1")
			if b, _ := os.ReadFile(template); string(b) == widgetsCRD(group) {
				t.Fatal("promote -f left the chart's template as it was")
			}

			upgrade := action.NewUpgrade(cfg)
			upgrade.Namespace, upgrade.WaitStrategy = ns, kube.HookOnlyStrategy
			upgrade.ServerSideApply = map[bool]string{true: "true", false: "false"}[mode.ssa]
			if ch, err = loader.Load(chart); err != nil {
				t.Fatal(err)
			}
			if _, err := upgrade.Run("widgets-"+mode.name, ch, nil); err != nil {
				t.Fatalf("helm upgrade after the plugin's step: %v", err)
			}
			live, err := e.clients.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), crd, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range live.Spec.Versions {
				if v.Storage != (v.Name == "v1") {
					t.Errorf("after the upgrade %s is storage: %v, want only v1", v.Name, v.Storage)
				}
			}
			for _, mf := range live.ManagedFields {
				if mf.Manager == "kubectl-crdversion" && mf.Subresource == "" && mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), `"f:spec"`) {
					t.Errorf("the plugin still holds spec fields after Helm's upgrade: %s", mf.FieldsV1.GetRawString())
				}
			}
		})
	}
}

// widgetsCRD is a chart's template of a CRD of group: v1beta1 served and
// stored, v1 served.
func widgetsCRD(group string) string {
	version := func(name string, storage bool) string {
		return "  - name: " + name + "\n    served: true\n    storage: " + map[bool]string{true: "true", false: "false"}[storage] +
			"\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n"
	}
	return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets." + group +
		"\nspec:\n  group: " + group + "\n  names:\n    kind: Widget\n    plural: widgets\n  scope: Namespaced\n  versions:\n" +
		version("v1beta1", true) + version("v1", false)
}
