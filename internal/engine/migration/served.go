package migration

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// ErrServingNotInEffect: discovery did not show a step's change of serving
// within the timeout. The step stays written.
var ErrServingNotInEffect = errors.New("the API server does not serve as the CRD says yet")

// waitForServing waits until discovery shows what the step changed in serving,
// on consistentReads reads: an API server picks up a CRD update a moment
// later, and discovery follows its handler of the objects.
func waitForServing(ctx context.Context, c cluster.Clients, step *results.StepResult, timeout time.Duration) error {
	after := step.After
	for _, v := range servingChanges(step.Before, after) {
		if _, err := waitForDiscovery(ctx, c.Discovery, c.FreshDiscovery, after.Spec.Group+"/"+v.Name, after.Spec.Names.Plural, timeout,
			func(r discoveryRead) bool { return r.answered && r.listed == v.Served }); err != nil {
			state := "served"
			if !v.Served {
				state = "no longer served"
			}
			return fmt.Errorf("%w: %s %s is %s on the CRD, and after %s discovery does not show it",
				ErrServingNotInEffect, after.Name, v.Name, state, timeout)
		}
	}
	return nil
}

// servingChanges are the versions of after whose serving differs from
// before; a version removed from the CRD is not among them.
func servingChanges(before, after *apiextensionsv1.CustomResourceDefinition) []apiextensionsv1.CustomResourceDefinitionVersion {
	was := map[string]bool{}
	if before != nil {
		for _, v := range before.Spec.Versions {
			was[v.Name] = v.Served
		}
	}
	var changed []apiextensionsv1.CustomResourceDefinitionVersion
	if after == nil {
		return changed
	}
	for _, v := range after.Spec.Versions {
		if v.Served != was[v.Name] {
			changed = append(changed, apiextensionsv1.CustomResourceDefinitionVersion{Name: v.Name, Served: v.Served})
		}
	}
	return changed
}
