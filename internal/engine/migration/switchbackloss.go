package migration

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// noteSwitchBack records on the CRD (crd: as the check left it) what a switch back from left to
// to found lost: undone, the plan then names the ways on instead of the same switch back; or
// accepted, the re-store after it takes the same loss (with prior's, a switch back accepted one
// step earlier whose objects are not re-stored yet). A hint: a failure to patch changes nothing
// the command did, and the next switch back checks every object anew.
func noteSwitchBack(ctx context.Context, c cluster.Clients, crd *apiextensionsv1.CustomResourceDefinition, left, to string, check *results.SwitchCheck, accepted bool, prior *lifecycle.Refused) {
	r := lifecycle.Refused{Storage: left, Generation: crd.Generation, First: []string{}, Fields: []string{}, To: to, Accepted: accepted, At: time.Now().UTC().Truncate(time.Second)}
	if accepted {
		r.Storage = to
	}
	seen := map[string]bool{}
	for _, p := range check.Proofs {
		for _, l := range p.Losses {
			name := l.Name
			if l.Namespace != "" {
				name = l.Namespace + "/" + name
			}
			if !seen[name] {
				seen[name] = true
				if len(r.First) < refusedNames {
					r.First = append(r.First, name)
				}
			}
			for _, d := range l.Diffs {
				if len(r.Fields) < refusedFields && !slices.Contains(r.Fields, d.Path) {
					r.Fields = append(r.Fields, d.Path)
				}
			}
		}
	}
	r.Objects = int64(len(seen))
	if prior != nil {
		// The objects of the step before are not re-stored yet: the re-store meets both losses.
		r.Objects = max(r.Objects, prior.Objects)
		for _, f := range prior.Fields {
			if len(r.Fields) < refusedFields && !slices.Contains(r.Fields, f) {
				r.Fields = append(r.Fields, f)
			}
		}
		for _, n := range prior.First {
			if len(r.First) < refusedNames && !slices.Contains(r.First, n) {
				r.First = append(r.First, n)
			}
		}
	}
	if r.Objects == 0 {
		return
	}
	slices.Sort(r.First)
	slices.Sort(r.Fields)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{stages.SwitchBackAnnotation: r.Annotation()}}})
	_, _ = c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, crd.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: cluster.FieldManager})
}
