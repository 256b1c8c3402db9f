package e2e

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// stepsAnnotation is the plugin's record of the steps it took on a CRD.
const stepsAnnotation = "crdversion.kubectl.io/steps"

// An owner applies the CRD; the plugin takes lifecycle steps on the live
// CRD (each an update of spec.versions, an atomic list) and the owner makes
// the same steps in its manifest (promote -f), then applies it its own way.
// That apply must meet no conflict with the plugin, leave the CRD as the
// manifest says, and keep the plugin's records, through two rounds:
// deprecated, then, after migrate, blocked. Before the plugin handed the
// fields back, kubectl apply --server-side was refused: "conflict with
// kubectl-crdversion ... .spec.versions".
func TestOwnersApplyAfterThePluginsSteps(t *testing.T) {
	owners := []struct {
		name string
		// apply is how the owner applies a manifest (install and upgrade).
		apply []string
		// install takes spec.versions from the fixture that created it.
		install []string
		// gitOps: the plugin holds a live step back unless forced.
		gitOps bool
	}{
		{name: "kubectl_server-side", apply: []string{"apply", "--server-side"}, install: []string{"--force-conflicts"}},
		{name: "kubectl_client-side", apply: []string{"apply"}},
		// Argo CD with ServerSideApply=true, and Flux, apply server-side
		// under their own managers; they force conflicts, which would hide
		// one: applied here unforced.
		{name: "argocd_server-side", apply: []string{"apply", "--server-side", "--field-manager=argocd-controller"}, install: []string{"--force-conflicts"}, gitOps: true},
		{name: "flux", apply: []string{"apply", "--server-side", "--field-manager=kustomize-controller"}, install: []string{"--force-conflicts"}, gitOps: true},
		// Argo CD's default sync is kubectl's client-side apply under its
		// own manager.
		{name: "argocd_client-side", apply: []string{"apply", "--field-manager=argocd-controller"}, gitOps: true},
		// Helm 4 applies server-side under its own manager, not forced;
		// Helm 3 sends a three-way strategic-merge patch from the last
		// release's manifest, as kubectl's client-side apply does from its
		// annotation, under "helm".
		{name: "helm_server-side", apply: []string{"apply", "--server-side", "--field-manager=helm"}, install: []string{"--force-conflicts"}},
		{name: "helm_three-way", apply: []string{"apply", "--field-manager=helm"}},
	}
	for _, o := range owners {
		t.Run(o.name, func(t *testing.T) {
			e := newEnv(t, demoObjects)
			// A manifest as owners keep it: no status.
			crd := e.crd(backups)
			crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
			manifest := writeCRD(t, crd)
			e.kubectl(append(append(slices.Clone(o.apply), o.install...), "-f", manifest)...).mustCode(t, 0)
			var force []string
			if o.gitOps {
				force = []string{"--force"}
			}
			step := func(args ...string) {
				t.Helper()
				e.plugin(append(append([]string{"promote", "backups", "v1"}, args...), force...)...).mustCode(t, 0)
				noSpecFieldsOfThePlugins(t, e.crd(backups))
			}
			ownerApplies := func() {
				t.Helper()
				r := e.kubectl(append(slices.Clone(o.apply), "-f", manifest)...)
				if r.code != 0 || strings.Contains(r.stderr, "conflict") {
					t.Fatalf("the owner's apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
				sameVersions(t, manifest, e.crd(backups))
			}

			step("--to", "bridge")
			step("--to", "deprecated")
			e.plugin("promote", "-f", manifest, "backups.storage.example.com", "v1").mustCode(t, 0)
			ownerApplies()

			e.plugin("migrate", "backups", "--switch-grace=0", "-q").mustCode(t, 0)
			step("--to", "blocked", "--despite-clients=requests") // sharedMetric
			e.plugin("promote", "-f", manifest, "backups.storage.example.com", "v1", "--to", "blocked").mustCode(t, 0)
			ownerApplies()
			if v := specVersion(e.crd(backups), "v1beta1"); v == nil || v.Served {
				t.Errorf("v1beta1 after the owner applied blocked: %+v, want not served", v)
			}
		})
	}
}

// noSpecFieldsOfThePlugins fails when the plugin's update entry holds a spec
// field: the owner's next server-side apply would conflict with it.
func noSpecFieldsOfThePlugins(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	for _, mf := range crd.ManagedFields {
		if mf.Manager != "kubectl-crdversion" || mf.Subresource != "" || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields); err != nil {
			t.Fatal(err)
		}
		if spec, ok := fields["f:spec"]; ok {
			t.Errorf("kubectl-crdversion holds spec fields after its step: %v", spec)
		}
	}
}

// sameVersions fails unless the live CRD serves, stores and deprecates
// exactly as the manifest says, and still carries the plugin's record of its
// steps (the owner's apply must not drop what is not its own).
func sameVersions(t *testing.T, file string, live *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var want apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	flags := func(crd *apiextensionsv1.CustomResourceDefinition) []string {
		var out []string
		for _, v := range crd.Spec.Versions {
			w := ""
			if v.DeprecationWarning != nil {
				w = *v.DeprecationWarning
			}
			out = append(out, strings.Join([]string{v.Name, boolWord(v.Served, "served"), boolWord(v.Storage, "storage"), boolWord(v.Deprecated, "deprecated"), w}, " "))
		}
		return out
	}
	if g, w := flags(live), flags(&want); !slices.Equal(g, w) {
		t.Errorf("live versions after the owner's apply\n got %q\nwant %q", g, w)
	}
	if _, ok := live.Annotations[stepsAnnotation]; !ok {
		t.Errorf("the owner's apply dropped the plugin's %s annotation: %v", stepsAnnotation, live.Annotations)
	}
}

func boolWord(b bool, word string) string {
	if b {
		return word
	}
	return "not-" + word
}
