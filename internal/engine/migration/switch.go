package migration

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
)

// storageVersionHash is discovery's hash of group/version/kind (the API
// server's formula): it changes exactly when the storage version does.
func storageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// consistentReads is how many discovery reads in a row must show the change:
// behind a load balancer each may reach another API server.
const consistentReads = 3

// waitForSwitch waits until discovery reports the CRD's storage version on
// consistentReads reads: before then a write may still be encoded at the old
// version. fresh, when set, makes a discovery client on new connections.
func waitForSwitch(ctx context.Context, disc discovery.DiscoveryInterface, fresh func() (discovery.DiscoveryInterface, func(), error), crd *apiextensionsv1.CustomResourceDefinition, timeout time.Duration) error {
	storage := stages.StorageVersion(crd)
	want := storageVersionHash(crd.Spec.Group, storage, crd.Spec.Names.Kind)
	got, err := waitForDiscovery(ctx, disc, fresh, crd.Spec.Group+"/"+storage, crd.Spec.Names.Plural, timeout, func(r discoveryRead) bool { return r.hash == want })
	if err != nil {
		return fmt.Errorf("%w: %s to storage version %s, after %s (discovery reports storageVersionHash %q, want %q): nothing was written",
			ErrSwitchNotInEffect, crd.Name, storage, timeout, got.hash, want)
	}
	return nil
}

type discoveryRead struct {
	// answered: a group version or its NotFound, not a passing error.
	answered bool
	// listed: the group version lists the resource.
	listed bool
	hash   string
}

// waitForDiscovery polls gv until plural reads as done wants; it returns the last read.
func waitForDiscovery(ctx context.Context, disc discovery.DiscoveryInterface, fresh func() (discovery.DiscoveryInterface, func(), error), gv, plural string, timeout time.Duration, done func(discoveryRead) bool) (discoveryRead, error) {
	read := func(d discovery.DiscoveryInterface) discoveryRead {
		list, err := d.ServerResourcesForGroupVersion(gv)
		switch {
		case apierrors.IsNotFound(err):
			return discoveryRead{answered: true}
		case err != nil:
			return discoveryRead{}
		}
		for _, r := range list.APIResources {
			if r.Name == plural {
				return discoveryRead{answered: true, listed: true, hash: r.StorageVersionHash}
			}
		}
		return discoveryRead{answered: true}
	}
	var got discoveryRead
	seen := 0
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if fresh == nil {
			if got = read(disc); !done(got) {
				seen = 0
				return false, nil
			}
			seen++
			return seen >= consistentReads, nil
		}
		reads := make([]discoveryRead, consistentReads)
		var g errgroup.Group
		for i := range reads {
			g.Go(func() error {
				d, release, err := fresh()
				if err != nil {
					return err
				}
				defer release()
				reads[i] = read(d)
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return false, err
		}
		for _, r := range reads {
			if got = r; !done(r) {
				return false, nil
			}
		}
		return true, nil
	})
	return got, err
}

// DefaultSwitchGrace covers the longest request an API server may still run
// at the old storage after a switch: up to twice its request timeout (60 s
// by default), as a slow admission or conversion webhook may stall a write.
const DefaultSwitchGrace = 2 * time.Minute

// NoSwitchGrace as Options.SwitchGrace waits for nothing after a switch, for
// a caller that knows no write can be under way across it.
const NoSwitchGrace time.Duration = -1
