package migration

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// refusedNames and refusedFields bound what the record names.
const (
	refusedNames  = 3
	refusedFields = 5
)

// noteRefused records on the CRD what the pass left for data loss, so status
// suggests a way forward; a clean pass removes an old record. A hint only:
// a failure to patch is logged, never fails the migration.
func noteRefused(ctx context.Context, c cluster.Clients, crd *apiextensionsv1.CustomResourceDefinition, lost int64, losses []results.Loss, log logr.Logger) {
	var value any // nil takes the annotation off
	switch {
	case lost > 0:
		r := lifecycle.Refused{Storage: stages.StorageVersion(crd), Generation: crd.Generation, Objects: lost, First: []string{}, Fields: []string{}, At: time.Now().UTC().Truncate(time.Second)}
		for _, l := range losses {
			name := l.Name
			if l.Namespace != "" {
				name = l.Namespace + "/" + name
			}
			if len(r.First) < refusedNames && !slices.Contains(r.First, name) {
				r.First = append(r.First, name)
			}
			for _, d := range l.Diffs {
				if len(r.Fields) < refusedFields && !slices.Contains(r.Fields, d.Path) {
					r.Fields = append(r.Fields, d.Path)
				}
			}
		}
		// Sorted: the same objects read the same, whatever order workers took them.
		slices.Sort(r.First)
		slices.Sort(r.Fields)
		value = r.Annotation()
	case crd.Annotations[stages.RefusedAnnotation] == "":
		return
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{stages.RefusedAnnotation: value}}})
	if _, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, crd.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: cluster.FieldManager}); err != nil {
		log.Info("the objects left for data loss are not noted on the CRD (status will not name them)", "error", err.Error())
	}
}
