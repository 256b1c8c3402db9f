package migration

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"errors"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// ErrStillServed: a version served again for a migration's checks may still
// be served after it: the step back failed or did not show.
var ErrStillServed = errors.New("serving no longer after the migration")

// hiddenVersions are the old versions in storedVersions the CRD does not
// serve and the schemas do not prove kept: no check sees what only they hold.
func hiddenVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	storage := stages.StorageVersion(crd)
	var hidden []string
	for _, v := range crd.Status.StoredVersions {
		sv := stages.SpecVersion(crd, v)
		if v == storage || sv == nil || sv.Served {
			continue
		}
		if ok, _ := schemacompat.SchemaProof(crd, v, storage); !ok {
			hidden = append(hidden, v)
		}
	}
	return hidden
}

func hasObjects(ctx context.Context, c cluster.Clients, crd *apiextensionsv1.CustomResourceDefinition) (bool, error) {
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: stages.StorageVersion(crd), Resource: crd.Spec.Names.Plural}
	list, err := c.Metadata.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return false, fmt.Errorf("listing %s: %w", crd.Name, err)
	}
	return len(list.Items) > 0, nil
}

// migrateServedAgain serves hidden again, deprecated, so each object is
// checked at its own version, then unserves them however the pass ended,
// returning once the API servers serve as before.
func migrateServedAgain(ctx context.Context, c cluster.Clients, crd *apiextensionsv1.CustomResourceDefinition, hidden []string, opts Options) (*results.Result, error) {
	name := crd.Name
	if err := cluster.RequireAccess(ctx, c, crd, cluster.Access{Op: "migrate", Need: []cluster.Permission{cluster.CRDPermission("update", "", name)}}, opts.Notify); err != nil {
		return nil, fmt.Errorf("%w: serving %v again for the check needs it", err, hidden)
	}
	step, err := applyStep(ctx, c.CRDs, name, DryRunNone, func(crd *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		return stages.PlanServeAgain(crd, hidden)
	})
	if err != nil {
		return nil, fmt.Errorf("serving %v again for the check: %w", hidden, err)
	}
	served := &results.ServedAgain{Versions: hidden}
	if opts.Notify != nil {
		opts.Notify(fmt.Sprintf("%s: %s not served: served again, deprecated, while each object is checked at it, then no longer served", name, strings.Join(hidden, ", ")))
		if g := stages.GitOpsOwner(crd); g != nil {
			// Its self-heal unserves them mid-pass, which stops the pass (safely, with no progress).
			opts.Notify(fmt.Sprintf("%s: %s syncs this CRD (%s): a sync during the pass unserves %s again and stops it (CRDChanged); pause its automated sync or self-heal for the run", name, g.Tool, g.Evidence, strings.Join(hidden, ", ")))
		}
	}
	var res *results.Result
	if err = waitForServing(ctx, c, step, opts.SwitchTimeout); err == nil {
		res, err = migrate(ctx, c, name, opts, crd)
	}
	if res != nil {
		res.ServedAgain = served
	}
	// The undo must happen however the pass ended, interruption included.
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.SwitchTimeout+time.Minute)
	defer cancel()
	undone, uerr := applyStep(uctx, c.CRDs, name, DryRunNone, func(crd *apiextensionsv1.CustomResourceDefinition) (*lifecycle.Plan, error) {
		return stages.PlanUndo(crd, step.Plan)
	})
	served.FieldsKept = step.FieldsKept
	if undone != nil && undone.FieldsKept != "" {
		served.FieldsKept = undone.FieldsKept
	}
	switch {
	case uerr != nil:
		served.UndoError = fmt.Sprintf("the step back is not written (%v): %s stay served", uerr, strings.Join(hidden, ", "))
	default:
		if werr := waitForServing(uctx, c, undone, opts.SwitchTimeout); werr != nil {
			served.UndoError = fmt.Sprintf("the step back is written, and the API servers did not all show it within %s: %v", opts.SwitchTimeout, werr)
		} else {
			served.Undone = true
		}
	}
	switch {
	case err != nil && !served.Undone:
		return nil, fmt.Errorf("%w; %w: %s", err, ErrStillServed, served.UndoError)
	case err != nil:
		return nil, err
	}
	if undone == nil {
		return res, nil
	}
	var losses []results.Loss
	for _, p := range res.Proofs {
		losses = append(losses, p.Losses...)
	}
	if lost := max(res.Lost, settleLost(res)); lost > 0 && res.StopReason == "" {
		// The record names the CRD's generation: the undo made another.
		noteRefused(uctx, c, undone.After, lost, losses, opts.Log.WithValues("crd", name))
	}
	return res, nil
}

func settleLost(res *results.Result) int64 {
	if res.Settle == nil {
		return 0
	}
	return res.Settle.Lost
}

// notServedResult is a migration that re-stored nothing: objects may be at
// versions nobody serves, and it did not serve them again.
func notServedResult(res *results.Result, start time.Time, unserved []string) *results.Result {
	res.Failures = []results.Failure{}
	res.StopReason = results.StopNotProven
	res.Stopped = fmt.Sprintf("nothing was re-stored: %s not served, and what only it holds no served version shows", strings.Join(unserved, ", "))
	res.PruneReason, res.PruneSkipped = results.PruneIncomplete, "nothing was re-stored"
	res.Duration = time.Since(start)
	return res
}
