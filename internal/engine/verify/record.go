package verify

import (
	"context"
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// maxRecordTries bounds retries after the CRD changed between our read and write.
const maxRecordTries = 5

// RecordVerification records a passed check of v on the CRD only while it keeps the
// fingerprint and storage version checked: a record on other schemas would lie. The API
// server's own status updates move resourceVersion, so a conflict means compare again.
func RecordVerification(ctx context.Context, client apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition, v string, rec lifecycle.Verification) error {
	return record(ctx, client, crd, v, rec, stages.VerifiedAnnotation)
}

// recordCheck records verify's check of v (stages.CheckedAnnotationPrefix) when it
// passed, and removes an earlier record when it did not.
func recordCheck(ctx context.Context, client apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition, v string, rec lifecycle.Verification, passed bool) error {
	if passed {
		return record(ctx, client, crd, v, rec, stages.CheckAnnotation)
	}
	key, _ := stages.CheckAnnotation(rec, v)
	if _, ok := crd.Annotations[key]; !ok {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: nil}}})
	if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, crd.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: cluster.FieldManager}); err != nil {
		return &StaleRecordError{CRD: crd.Name, Annotation: key, Err: err}
	}
	return nil
}

func record(ctx context.Context, client apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition, v string, rec lifecycle.Verification, annotation func(lifecycle.Verification, string) (string, string)) error {
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	rec.Fingerprint = stages.Fingerprint(crd, rec.From, v)
	rec.Generation = crd.Generation
	key, val := annotation(rec, v)
	rv := crd.ResourceVersion
	for range maxRecordTries {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": rv, "annotations": map[string]string{key: val}}})
		if err != nil {
			return err
		}
		_, err = crds.Patch(ctx, crd.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: cluster.FieldManager})
		if err == nil || !pass.RealConflict(err, apiextensionsv1.Resource("customresourcedefinitions"), crd.Name) {
			if err != nil {
				return fmt.Errorf("recording the check of %s on %s: %w", v, crd.Name, err)
			}
			return nil
		}
		fresh, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if fresh.Generation != crd.Generation || stages.StorageVersion(fresh) != rec.From || stages.Fingerprint(fresh, rec.From, v) != rec.Fingerprint {
			return nil // changed under the check: nothing to record
		}
		rv = fresh.ResourceVersion
	}
	return nil
}

// StaleRecordError: a check failed, and the passing one recorded before it
// could not be removed, so the step to bridge would still trust it.
type StaleRecordError struct {
	CRD, Annotation string
	Err             error
}

func (e *StaleRecordError) Error() string {
	return fmt.Sprintf("remove the earlier passing check recorded on %s (annotation %s) after this one failed: %v", e.CRD, e.Annotation, e.Err)
}

func (e *StaleRecordError) Unwrap() error { return e.Err }
