package check

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// windowFindings name a step a stopped run left open on the live CRD (a
// version served again, a switch not yet checked), with the command that
// closes it: the live CRD is not yet as the plugin's steps leave it, and
// the plan toward the release begins there. No apply fails for it, so it
// decides no exit code (rule 22).
func windowFindings(live *apiextensionsv1.CustomResourceDefinition) []results.Finding {
	w := stages.OpenWindow(live)
	if w == nil {
		return nil
	}
	return []results.Finding{{Severity: lifecycle.SeverityWarning, Kind: results.FindingLifecycle, CRD: live.Name, Rule: "windowOpen",
		Message: "a stopped run left a step open on the live CRD: " + stages.WindowReason(w),
		Fix:     []lifecycle.Advice{stages.WindowAdvice(w)}}}
}
