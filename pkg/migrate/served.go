package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// ErrServingNotInEffect: a step began or stopped serving a version, and
// the API server's discovery did not show it within the timeout. The step
// stays written.
var ErrServingNotInEffect = errors.New("the API server does not serve as the CRD says yet")

// waitForServing waits, after a step, until the API server serves what the
// step changed: every version it began serving is listed by discovery, and
// every version it stopped serving is not, on consistentReads reads. An
// API server picks up a CRD update a moment later: until then a request at
// a new version is NotFound (a create right after `promote`, or the next
// step at once, as bridge lists the objects at the new version), and one at
// a version no longer served still works. An API server's discovery
// follows its handler of the objects: both learn of the update from one
// informer, and discovery is rebuilt by a queue behind it.
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
// before: their names, and whether after serves them. A version removed
// from the CRD is not among them (its objects, if any, are unreadable at
// it either way).
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
