package releases

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// installer is the field manager `kubectl apply --server-side` writes
// under: the CRDs and the objects are applied as a user applies them.
const installer = "kubectl"

// applyCRD sends crd as `kubectl apply --server-side` does (no force: a
// conflict with another manager is refused), as a dry run when asked. It
// returns the API server's answer.
func applyCRD(ctx context.Context, c fixtures.Clients, crd *apiextensionsv1.CustomResourceDefinition, dryRun bool) error {
	body, err := applyBody(crd)
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: installer}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, crd.Name, types.ApplyPatchType, body, opts)
	return err
}

// applyBody is the manifest as a client sends it: no status, nothing the
// server sets.
func applyBody(crd *apiextensionsv1.CustomResourceDefinition) ([]byte, error) {
	c := crd.DeepCopy()
	c.APIVersion, c.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return json.Marshal(m)
}

// waitServed returns once the API server serves the CRD as crd says:
// established, discovery listing exactly its served versions, and storing
// at its storage version. A write sooner can meet the CRD before the
// update (the handler follows it asynchronously).
func waitServed(ctx context.Context, c fixtures.Clients, crd *apiextensionsv1.CustomResourceDefinition) error {
	var why string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !slices.ContainsFunc(got.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		}) {
			why = "not established"
			return false, nil
		}
		for _, v := range got.Spec.Versions {
			list, err := c.CRDs.Discovery().ServerResourcesForGroupVersion(crd.Spec.Group + "/" + v.Name)
			if err != nil && !apierrors.IsNotFound(err) {
				why = err.Error()
				return false, nil
			}
			listed := list != nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == crd.Spec.Names.Plural })
			if listed != v.Served {
				why = fmt.Sprintf("discovery lists %s/%s: %v", crd.Spec.Group, v.Name, listed)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to be served as applied: %s: %w", crd.Name, why, err)
	}
	return fixtures.WaitStorageInEffect(ctx, c.CRDs.Discovery(), crd, time.Minute)
}
