package migration

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// maxSwitchRechecks bounds the re-runs of the check as the CRD keeps moving.
const maxSwitchRechecks = 3

// checkSwitch runs, right after the switch away from old, the check that
// re-storing old's objects loses nothing; where it fails or cannot run it
// switches back and waits for every API server. Until re-stored, every
// object is still at old, so switching back loses nothing.
func checkSwitch(ctx context.Context, c cluster.Clients, name, old string, timeout time.Duration, opts verify.ProveOptions, back planner) (*results.SwitchCheck, error) {
	res := &results.SwitchCheck{}
	crds := c.CRDs.ApiextensionsV1().CustomResourceDefinitions()
	err := func() error {
		for rechecks := 0; ; rechecks++ {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if err := waitForSwitch(ctx, c.Discovery, c.FreshDiscovery, crd, timeout); err != nil {
				return err
			}
			if err := everyServerShows(ctx, c, crd, timeout); errors.Is(err, errCRDMoved) && rechecks < maxSwitchRechecks {
				continue
			} else if err != nil {
				return err
			}
			opts.Versions, opts.Record = []string{old}, true
			if res.Proofs, err = verify.ProveRestorable(ctx, c, crd, opts); err != nil {
				return err
			}
			// The verdict is about the CRD it was made on, not one changed meanwhile.
			now, err := crds.Get(ctx, name, metav1.GetOptions{})
			switch {
			case err != nil:
				return err
			case sameGeneration(crd, now) || !res.Holds():
				return nil
			case rechecks == maxSwitchRechecks:
				return fmt.Errorf("%s changed during each of %d checks of its switch (generation %d → %d): no check finished on the CRD as it is", name, maxSwitchRechecks+1, crd.Generation, now.Generation)
			}
		}
	}()
	if err == nil && res.Holds() {
		return res, nil
	}
	// Switching back must happen even when the run was interrupted.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var berr error
	res.Back, berr = applyStep(bctx, c.CRDs, name, DryRunNone, back)
	if berr == nil {
		// Until the API servers store at old again, a client's write takes the
		// round trip the check found losing data.
		berr = waitForSwitch(bctx, c.Discovery, c.FreshDiscovery, res.Back.After, timeout)
	}
	if berr == nil {
		if berr = everyServerShows(bctx, c, res.Back.After, timeout); berr != nil {
			berr = fmt.Errorf("%w (the switch back is written; until they have it, a write through them is stored at %s)", berr, stages.StorageVersion(res.Back.Before))
		}
	}
	switch {
	case berr != nil && err != nil:
		return res, fmt.Errorf("%w; switching the storage version of %s back to %s failed too: %v", err, name, old, berr)
	case berr != nil:
		return res, fmt.Errorf("switching the storage version of %s back to %s: %w", name, old, berr)
	case err != nil:
		return res, fmt.Errorf("%w: the storage version of %s was switched back to %s", err, name, old)
	}
	return res, nil
}
