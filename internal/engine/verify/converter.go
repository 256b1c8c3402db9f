package verify

import (
	"context"
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

var (
	// ErrConverterUnproven: no object could show the webhook converts: none exists, and
	// the smallest one the schema seems to allow was refused before any conversion.
	ErrConverterUnproven = errors.New("the conversion webhook could not be shown to answer")
)

// ProveConverter shows the CRD's webhook converts both ways between v and storage: a
// dry-run create at v of the smallest object the schema allows persists nothing; if the
// schema refuses it, an existing object sent back as a dry-run update at v shows the same.
func ProveConverter(ctx context.Context, dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition, v string) error {
	if !stages.ConvertsByWebhook(crd) {
		return nil
	}
	storage := stages.StorageVersion(crd)
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v, Resource: crd.Spec.Names.Plural}
	failed := func(how string, err error) error {
		return fmt.Errorf("%w: %s: %s at %s, converted to %s and back, failed: %w", results.ErrWebhookUnavailable, crd.Name, how, v, storage, err)
	}
	probe := &unstructured.Unstructured{Object: schemacompat.MinimalObject(crd, v, "crdversion-probe-"+rand.String(8), metav1.NamespaceDefault)}
	r := dyn.Resource(gvr).Namespace(probe.GetNamespace())
	_, err := r.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: cluster.FieldManager})
	switch {
	case err == nil:
		return nil
	case pass.IsConversionFailure(err):
		return failed("a server-side dry-run create", err)
	}
	refused := err
	list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
	switch {
	case pass.IsConversionFailure(err):
		return failed("a read", err)
	case err != nil:
		return err
	case len(list.Items) == 0:
		return fmt.Errorf("%w: %s has no object, and the smallest one its schema at %s seems to allow was refused before any conversion (%v)", ErrConverterUnproven, crd.Name, v, refused)
	}
	o := &list.Items[0]
	_, err = dyn.Resource(gvr).Namespace(o.GetNamespace()).Update(ctx, o, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: cluster.FieldManager})
	if pass.IsConversionFailure(err) {
		return failed(fmt.Sprintf("a server-side dry-run update of %s", o.GetName()), err)
	}
	return err
}
