package migration

import (
	"context"
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// maxReplans bounds the re-plans after someone else changed the CRD.
const maxReplans = 5

// ErrKeepsChanging: the CRD's update met a conflict maxReplans+1 times in a
// row (other writers keep updating it); nothing was written.
var ErrKeepsChanging = errors.New("keeps changing under us")

// planner decides a lifecycle step from the CRD as it is now.
type planner func(*apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error)

// applyStep reads the CRD, plans the step and writes it with the
// resourceVersion read: on a conflict it re-plans, never writing over a change.
func applyStep(ctx context.Context, client apiextensionsclient.Interface, name string, dryRun DryRun, plan planner) (*results.StepResult, error) {
	if err := dryRun.check(false); err != nil {
		return nil, err
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	res := &results.StepResult{}
	for {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		p, err := plan(crd)
		if err != nil {
			return nil, err
		}
		// A re-plan takes no other step than the one planned first: two "next step"s
		// at once must not take two steps.
		if first := res.Plan; first != nil && (first.Pair != p.Pair || first.From != p.From || first.To != p.To) {
			return nil, fmt.Errorf("%w: %s: %s of %s was planned from %s, and is now %s (another client's step?): nothing was written",
				ErrChangedMeanwhile, name, first.To, first.Pair.New, first.From, p.From)
		}
		res.Plan, res.Before = p, crd
		if dryRun == DryRunClient {
			res.After = p.After
			return res, nil
		}
		after, err := crds.Update(ctx, p.After, dryRun.updateOptions(""))
		switch {
		case err == nil:
			res.After = after
			if dryRun == DryRunNone {
				if res.After, err = returnFields(ctx, client, crd, after); err != nil {
					res.FieldsKept = err.Error()
				}
			}
			return res, nil
		case apierrors.IsConflict(err) && res.Replans < maxReplans:
			res.Replans++
		case apierrors.IsConflict(err):
			return nil, fmt.Errorf("%s %w: %d conflicts in a row", name, ErrKeepsChanging, res.Replans+1)
		default:
			return nil, fmt.Errorf("updating %s: %w", name, err)
		}
	}
}
