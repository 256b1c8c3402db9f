package check

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// helmKeep is the annotation that makes helm upgrade and uninstall leave a resource: Helm reads
// it on the live object, so it can be set before the upgrade that drops the CRD.
const helmKeep = "helm.sh/resource-policy"

// dropOwner is one owner a live CRD's marks name, and what it does once the manifests it
// applies lack the CRD.
type dropOwner struct {
	// who and how, in words: "helm upgrade of release metallb in metallb-system".
	what    string
	deletes bool
}

// dropOwners reads who applies a live CRD from its marks (Helm, Argo CD, Flux, an ApplySet,
// kubectl's own) and whether each deletes it when its manifests no longer have it.
func dropOwners(c *apiextensionsv1.CustomResourceDefinition) []dropOwner {
	var out []dropOwner
	helmTemplated := c.Annotations["meta.helm.sh/release-name"] != ""
	if helmTemplated {
		release := c.Annotations["meta.helm.sh/release-name"] + " in " + c.Annotations["meta.helm.sh/release-namespace"]
		if c.Annotations[helmKeep] == "keep" {
			out = append(out, dropOwner{what: "helm upgrade of release " + release + " (the CRD has " + helmKeep + ": keep)"})
		} else {
			out = append(out, dropOwner{what: "helm upgrade of release " + release + " (its chart templates the CRD, without " + helmKeep + ": keep)", deletes: true})
		}
	}
	if app := argoApp(c); app != "" {
		// Argo CD honours Prune=false on the resource itself.
		if slices.Contains(strings.Split(c.Annotations["argocd.argoproj.io/sync-options"], ","), "Prune=false") {
			out = append(out, dropOwner{what: "Argo CD application " + app + " (the CRD has sync-options Prune=false)"})
		} else {
			out = append(out, dropOwner{what: "Argo CD application " + app + " syncing with prune", deletes: true})
		}
	}
	if ks := c.Labels["kustomize.toolkit.fluxcd.io/name"]; ks != "" {
		ks += " in " + c.Labels["kustomize.toolkit.fluxcd.io/namespace"]
		if c.Annotations["kustomize.toolkit.fluxcd.io/prune"] == "disabled" {
			out = append(out, dropOwner{what: "Flux Kustomization " + ks + " (the CRD has kustomize.toolkit.fluxcd.io/prune: disabled)"})
		} else {
			out = append(out, dropOwner{what: "Flux Kustomization " + ks + " with prune: true", deletes: true})
		}
	}
	// A HelmRelease upgrades as Helm does: where the Helm annotations are on the CRD, the
	// Helm owner above says it already.
	if hr := c.Labels["helm.toolkit.fluxcd.io/name"]; hr != "" && !helmTemplated {
		out = append(out, dropOwner{what: "Flux HelmRelease " + hr + " in " + c.Labels["helm.toolkit.fluxcd.io/namespace"] + ", where its chart templates the CRD", deletes: true})
	}
	if set := c.Labels["applyset.kubernetes.io/part-of"]; set != "" {
		out = append(out, dropOwner{what: "kubectl apply --prune --applyset (ApplySet " + set + ")", deletes: true})
	}
	if _, ok := c.Annotations[LastAppliedAnnotation]; ok || appliedBy(c, kubectlApplyManager) {
		out = append(out, dropOwner{what: "kubectl apply --prune", deletes: true})
	}
	return out
}

func argoApp(c *apiextensionsv1.CustomResourceDefinition) string {
	if app, _, ok := strings.Cut(c.Annotations["argocd.argoproj.io/tracking-id"], ":"); ok {
		return app
	}
	return c.Labels["argocd.argoproj.io/instance"]
}

// appliedBy says whether manager applied c server-side.
func appliedBy(c *apiextensionsv1.CustomResourceDefinition, manager string) bool {
	for _, mf := range c.ManagedFields {
		if mf.Manager == manager && mf.Operation == "Apply" {
			return true
		}
	}
	return false
}

// genericOwners names, where no mark tells what applied a CRD, the owners that delete it.
const genericOwners = "a helm upgrade whose chart templates it (without " + helmKeep + ": keep), an Argo CD or Flux sync with prune, kubectl apply --prune"

// ownersSay is what the owners do with name, a CRD the new manifests lack (all: its objects
// in words, "" for none), and whether one of them deletes it; where no owner is named, the
// generic ones do.
func ownersSay(owners []dropOwner, name, all string) (string, bool) {
	gone := name
	if all != "" {
		gone += " and, with it, " + all
	}
	var deletes, leaves []string
	for _, o := range owners {
		if o.deletes {
			deletes = append(deletes, o.what)
		} else {
			leaves = append(leaves, o.what)
		}
	}
	if len(owners) == 0 {
		return fmt.Sprintf("nothing on it tells what applied it: %s deletes %s; a plain kubectl apply leaves it", genericOwners, gone), true
	}
	var s []string
	if len(deletes) > 0 {
		s = append(s, fmt.Sprintf("%s deletes %s", strings.Join(deletes, ", "), gone))
	}
	s = append(s, strings.Join(append(leaves, "a plain kubectl apply"), ", ")+" leaves it")
	if len(deletes) == 0 {
		s = append(s, "an apply that prunes (Argo CD or Flux with pruning, kubectl apply --prune) would delete "+gone)
	}
	return strings.Join(s, "; "), len(deletes) > 0
}

// helmMayKeep says whether helm.sh/resource-policy: keep on c is a way to keep it: a chart
// templates it (or nothing tells), and it has no keep yet.
func helmMayKeep(c *apiextensionsv1.CustomResourceDefinition, owners []dropOwner) bool {
	return c.Annotations[helmKeep] != "keep" && (len(owners) == 0 || c.Annotations["meta.helm.sh/release-name"] != "")
}
