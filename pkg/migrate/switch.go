package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"

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

// WaitForSwitch waits until the API server's discovery reports the CRD's
// storage version as the resource's storage version. Right after a CRD
// update (a helm upgrade, a kubectl apply) writes can still be encoded at
// the old version for a while; a rewrite before then would re-store objects
// at the old version and prove nothing.
func WaitForSwitch(ctx context.Context, disc discovery.DiscoveryInterface, crd *apiextensionsv1.CustomResourceDefinition, timeout time.Duration) error {
	storage := lifecycle.StorageVersion(crd)
	want := storageVersionHash(crd.Spec.Group, storage, crd.Spec.Names.Kind)
	gv := crd.Spec.Group + "/" + storage
	var got string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		list, err := disc.ServerResourcesForGroupVersion(gv)
		if err != nil {
			return false, nil // not served yet, or a passing error: poll on
		}
		for _, r := range list.APIResources {
			if r.Name == crd.Spec.Names.Plural {
				got = r.StorageVersionHash
				return got == want, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("the switch of %s to storage version %s is not in effect after %s (discovery reports storageVersionHash %q, want %q): nothing was written",
			crd.Name, storage, timeout, got, want)
	}
	return nil
}
