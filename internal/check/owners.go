package check

import (
	"context"
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// kubectlApplyManager is kubectl apply --server-side's manager; it forces no conflicts unasked.
const kubectlApplyManager = "kubectl"

// ownerApplies sends the new CRD as each server-side apply owner will: an unforced dry-run apply
// under its field manager. Another writer's update of a field the owner applied (spec.versions
// is atomic) makes that apply a conflict an update never meets: kubectl apply --server-side
// fails (an error); a GitOps tool forcing conflicts reverts that change (a warning).
func ownerApplies(ctx context.Context, client apiextensionsclient.Interface, live, n *apiextensionsv1.CustomResourceDefinition) ([]results.Finding, error) {
	var out []results.Finding
	seen := map[string]bool{}
	for _, mf := range live.ManagedFields {
		if mf.Operation != metav1.ManagedFieldsOperationApply || mf.Manager == cluster.FieldManager || seen[mf.Manager] {
			continue
		}
		seen[mf.Manager] = true
		sent := n.DeepCopy()
		sent.APIVersion, sent.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
		sent.ResourceVersion, sent.ManagedFields, sent.Status = "", nil, apiextensionsv1.CustomResourceDefinitionStatus{}
		body, err := json.Marshal(sent)
		if err != nil {
			return nil, err
		}
		_, err = client.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, n.Name, types.ApplyPatchType, body,
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: mf.Manager, FieldValidation: metav1.FieldValidationStrict})
		switch {
		case err == nil:
			continue
		case !apierrors.IsConflict(err):
			// Refusals other than a conflict are the update's dry run's to report.
			continue
		}
		f := results.Finding{Severity: lifecycle.SeverityWarning, Kind: results.FindingRejected, CRD: n.Name, Rule: "applyConflict",
			Message: fmt.Sprintf("a server-side apply of it as %s, which applied this CRD, conflicts with another writer's change (the API server: %s): an apply that forces conflicts takes the fields back, reverting that change", mf.Manager, err),
			Fix: []lifecycle.Advice{
				{Text: "make the change the other writer made in the manifest the owner applies (a lifecycle step: promote -f CRD_MANIFEST), then apply"},
				{Text: fmt.Sprintf("or take the fields back on purpose: kubectl apply --server-side --force-conflicts --field-manager=%s -f NEW", mf.Manager)}}}
		if mf.Manager == kubectlApplyManager {
			f.Severity = lifecycle.SeverityError
			f.Message = fmt.Sprintf("kubectl apply --server-side of it, as %s applied this CRD, is refused: it conflicts with another writer's change (the API server: %s)", mf.Manager, err)
		}
		out = append(out, f)
	}
	return out, nil
}
