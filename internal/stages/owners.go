package stages

import (
	"encoding/json"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Owner is a field manager other than the plugin that owns spec.versions.
type Owner struct {
	Manager   string `json:"manager"`
	Operation string `json:"operation"`
	// Tool names the tool behind the manager when it is a known one.
	Tool string `json:"tool,omitempty"`
}

// knownTools maps field managers to their tools: those that re-apply a CRD from a manifest.
var knownTools = map[string]string{
	"helm":                          "Helm",
	"argocd-controller":             "Argo CD",
	"argocd-application-controller": "Argo CD",
	"kustomize-controller":          "Flux",
	"helm-controller":               "Flux",
	"kubectl-client-side-apply":     "kubectl apply",
	"kubectl":                       "kubectl apply, server-side",
}

// VersionsOwners lists the field managers other than self that own spec.versions (an atomic list)
// and would put it back: server-side appliers and known client-side tools, not one-off updates.
func VersionsOwners(crd *apiextensionsv1.CustomResourceDefinition, self string) []Owner {
	var out []Owner
	for _, mf := range crd.ManagedFields {
		tool, known := knownTools[mf.Manager]
		if mf.Manager == self || mf.FieldsV1 == nil || (!known && mf.Operation != metav1.ManagedFieldsOperationApply) {
			continue
		}
		var fields map[string]map[string]any
		if json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		if _, ok := fields["f:spec"]["f:versions"]; ok {
			out = append(out, Owner{Manager: mf.Manager, Operation: string(mf.Operation), Tool: tool})
		}
	}
	return out
}

// OwnersWarning says the owners' next sync reverts a live change of spec.versions; nil without owners.
func OwnersWarning(owners []Owner) *Advice {
	if len(owners) == 0 {
		return nil
	}
	names := make([]string, len(owners))
	for i, o := range owners {
		names[i] = o.Manager
		if o.Tool != "" {
			names[i] = fmt.Sprintf("%s (%s)", o.Manager, o.Tool)
		}
	}
	what := "its next sync or upgrade reverts this change"
	for _, o := range owners {
		if o.Operation == string(metav1.ManagedFieldsOperationApply) {
			// Owners get spec.versions back after a step: their server-side apply meets no conflict.
			what = "its next apply of its manifest puts back what the manifest says, reverting this change"
		}
	}
	w := Advise(PromoteFileStep("FILE"), "spec.versions is managed by %s: %s; make the same edit in the CRD manifest it applies, offline",
		strings.Join(names, ", "), what)
	return &w
}

// gitOpsMarks are the labels and annotations Argo CD and Flux put on what they apply.
var gitOpsMarks = []struct{ key, tool string }{
	{"argocd.argoproj.io/tracking-id", "Argo CD"},
	{"argocd.argoproj.io/instance", "Argo CD"},
	{"kustomize.toolkit.fluxcd.io/name", "Flux"},
	{"helm.toolkit.fluxcd.io/name", "Flux"},
}

// GitOpsOwner says which GitOps tool syncs the CRD, from its marks or field managers; nil if none.
// Argo CD's default label app.kubernetes.io/instance counts only beside its manager: Helm sets it too.
func GitOpsOwner(crd *apiextensionsv1.CustomResourceDefinition) *GitOps {
	for _, m := range gitOpsMarks {
		if v, ok := crd.Annotations[m.key]; ok {
			return &GitOps{Tool: m.tool, Evidence: fmt.Sprintf("annotation %s=%s", m.key, v)}
		}
		if v, ok := crd.Labels[m.key]; ok {
			return &GitOps{Tool: m.tool, Evidence: fmt.Sprintf("label %s=%s", m.key, v)}
		}
	}
	for _, o := range VersionsOwners(crd, "") {
		if o.Tool == "Argo CD" || o.Tool == "Flux" {
			return &GitOps{Tool: o.Tool, Evidence: "field manager " + o.Manager}
		}
	}
	for _, mf := range crd.ManagedFields {
		if v, ok := crd.Labels["app.kubernetes.io/instance"]; ok && knownTools[mf.Manager] == "Argo CD" {
			return &GitOps{Tool: "Argo CD", Evidence: fmt.Sprintf("label app.kubernetes.io/instance=%s, field manager %s", v, mf.Manager)}
		}
	}
	return nil
}
