package stages

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// HowApplied is the owner's apply of manifest (a release's CRD), the way the live CRD shows it is
// applied: a Helm upgrade, an Argo CD or Flux sync, kubectl's client-side or server-side apply.
// Nothing tells for a CRD not on the cluster: a server-side apply, which takes CRDs of any size.
func HowApplied(live *apiextensionsv1.CustomResourceDefinition, manifest string) Advice {
	ssa := fmt.Sprintf("kubectl apply --server-side -f %s", manifest)
	if live == nil {
		return Advise(nil, "%s", ssa)
	}
	a := live.Annotations
	if rel := a["meta.helm.sh/release-name"]; rel != "" {
		return Advise(nil, "helm upgrade %s CHART --namespace %s (the Helm release that templates it: Helm applies it with the chart)", rel, a["meta.helm.sh/release-namespace"])
	}
	if g := GitOpsOwner(live); g != nil {
		l := live.Labels
		switch {
		case g.Tool == "Flux" && l["kustomize.toolkit.fluxcd.io/name"] != "":
			return Advise(nil, "merge the release into the Git source, then flux reconcile kustomization %s --namespace %s --with-source (%s)", l["kustomize.toolkit.fluxcd.io/name"], l["kustomize.toolkit.fluxcd.io/namespace"], g.Evidence)
		case g.Tool == "Flux" && l["helm.toolkit.fluxcd.io/name"] != "":
			return Advise(nil, "move the HelmRelease to the release's chart version, then flux reconcile helmrelease %s --namespace %s --with-source (%s)", l["helm.toolkit.fluxcd.io/name"], l["helm.toolkit.fluxcd.io/namespace"], g.Evidence)
		case g.Tool == "Argo CD":
			app, _, _ := strings.Cut(a["argocd.argoproj.io/tracking-id"], ":")
			if app == "" {
				app = l["argocd.argoproj.io/instance"]
			}
			if app == "" {
				app = l["app.kubernetes.io/instance"]
			}
			return Advise(nil, "merge the release into the Git source, then argocd app sync %s (%s)", app, g.Evidence)
		}
		return Advise(nil, "merge the release into the Git source %s syncs (%s)", g.Tool, g.Evidence)
	}
	for _, o := range VersionsOwners(live, "") {
		if o.Manager == "kubectl-client-side-apply" {
			return Advise(nil, "kubectl apply -f %s (applied client-side until now; over 256 KiB it takes --server-side)", manifest)
		}
	}
	return Advise(nil, "%s", ssa)
}
