package lifecycle

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

// knownTools maps field managers to the tools people know them as: the
// ones that re-apply a CRD from a manifest and so revert a live edit.
var knownTools = map[string]string{
	"helm":                          "Helm",
	"argocd-controller":             "Argo CD",
	"argocd-application-controller": "Argo CD",
	"kustomize-controller":          "Flux",
	"helm-controller":               "Flux",
	"kubectl-client-side-apply":     "kubectl apply",
	"kubectl":                       "kubectl apply --server-side",
}

// VersionsOwners lists the field managers other than self that own
// spec.versions (an atomic list: whoever owns it owns every version) and
// would put it back: every server-side apply manager, and the known tools
// that re-apply client-side. A one-off update (a script, kubectl edit) does
// not come back, so it is not listed.
func VersionsOwners(crd *apiextensionsv1.CustomResourceDefinition, self string) []Owner {
	var out []Owner
	for _, mf := range crd.ManagedFields {
		tool, known := knownTools[mf.Manager]
		if mf.Manager == self || mf.FieldsV1 == nil || (!known && mf.Operation != metav1.ManagedFieldsOperationApply) {
			continue
		}
		var fields map[string]map[string]any
		if json.Unmarshal(mf.FieldsV1.Raw, &fields) != nil {
			continue
		}
		if _, ok := fields["f:spec"]["f:versions"]; ok {
			out = append(out, Owner{Manager: mf.Manager, Operation: string(mf.Operation), Tool: tool})
		}
	}
	return out
}

// OwnersWarning tells the user that the owners' next sync reverts a live
// change of spec.versions, and that the manifest is where it belongs.
func OwnersWarning(owners []Owner) string {
	if len(owners) == 0 {
		return ""
	}
	names := make([]string, len(owners))
	for i, o := range owners {
		names[i] = o.Manager
		if o.Tool != "" {
			names[i] = fmt.Sprintf("%s (%s)", o.Manager, o.Tool)
		}
	}
	return fmt.Sprintf("spec.versions is managed by %s: its next sync or upgrade reverts this change; make the same edit in the CRD manifest it applies (kubectl crdversion promote -f FILE does it offline)",
		strings.Join(names, ", "))
}
