package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// storageVersionHash is what discovery publishes for a resource stored at
// group/version/kind (the API server's own formula): it changes exactly
// when the storage version does, so it tells when a switch is in effect.
func storageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// consistentReads is how many discovery reads in a row, each on a new
// connection, must report the new hash: behind a load balancer each may
// reach another API server, and one that has not seen the CRD update yet
// still writes at the old version.
const consistentReads = 3

// WaitForSwitch waits until the API server's discovery reports the CRD's
// storage version as the resource's storage version on consistentReads
// reads. Right after a CRD update (a helm upgrade, a kubectl apply) writes
// can still be encoded at the old version for a while; a rewrite before
// then would re-store objects at the old version and prove nothing. fresh,
// when set, gives a discovery client on new connections: the reads then go
// out at once, each on connections of its own (behind a load balancer each
// may reach another API server, and an API server that has seen the switch
// never goes back); otherwise disc is asked consistentReads times in a row.
func WaitForSwitch(ctx context.Context, disc discovery.DiscoveryInterface, fresh func() (discovery.DiscoveryInterface, func(), error), crd *apiextensionsv1.CustomResourceDefinition, timeout time.Duration) error {
	storage := lifecycle.StorageVersion(crd)
	want := storageVersionHash(crd.Spec.Group, storage, crd.Spec.Names.Kind)
	gv := crd.Spec.Group + "/" + storage
	read := func(d discovery.DiscoveryInterface) string {
		if list, err := d.ServerResourcesForGroupVersion(gv); err == nil {
			for _, r := range list.APIResources {
				if r.Name == crd.Spec.Names.Plural {
					return r.StorageVersionHash
				}
			}
		}
		return "" // not served yet, or a passing error
	}
	var got string
	seen := 0
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if fresh == nil {
			if got = read(disc); got != want {
				seen = 0
				return false, nil
			}
			seen++
			return seen >= consistentReads, nil
		}
		hashes := make([]string, consistentReads)
		var g errgroup.Group
		for i := range hashes {
			g.Go(func() error {
				d, done, err := fresh()
				if err != nil {
					return err
				}
				defer done()
				hashes[i] = read(d)
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return false, err
		}
		for _, h := range hashes {
			if got = h; h != want {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w: %s to storage version %s, after %s (discovery reports storageVersionHash %q, want %q): nothing was written",
			ErrSwitchNotInEffect, crd.Name, storage, timeout, got, want)
	}
	return nil
}

// DefaultSwitchGrace covers the longest request an API server may still be
// running when the storage version switches: it keeps the old storage for
// requests already under way, and tears it down after up to twice its
// request timeout (60 s by default). A write stalled that long (a slow
// admission or conversion webhook) lands at the old version.
const DefaultSwitchGrace = 2 * time.Minute

// NoSwitchGrace as Options.SwitchGrace waits for nothing after a switch:
// for a caller that knows no write can be under way across it. The zero
// value means DefaultSwitchGrace, the safe choice for a caller that did not
// think about it.
const NoSwitchGrace time.Duration = -1
