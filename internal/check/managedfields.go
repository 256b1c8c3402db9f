package check

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// removedVersionEntries finds live objects whose managedFields name a version of the group the
// new CRD lacks: once it is gone the server cannot convert the entry, and every server-side
// apply fails (kubernetes#111937) until the entries are dropped: an error. Unserved versions
// still convert; their entries break nothing yet.
func removedVersionEntries(ctx context.Context, meta metadata.Interface, live, next *apiextensionsv1.CustomResourceDefinition, pageSize int64) ([]results.Finding, error) {
	gone := func(mf metav1.ManagedFieldsEntry) (string, bool) {
		gv, err := schema.ParseGroupVersion(mf.APIVersion)
		if err != nil || gv.Group != next.Spec.Group || stages.SpecVersion(next, gv.Version) != nil {
			return "", false
		}
		return gv.Version, true
	}
	gvr := schema.GroupVersionResource{Group: live.Spec.Group, Version: usage.ListVersion(live), Resource: live.Spec.Names.Plural}
	found, err := cluster.ObjectsWithEntries(ctx, meta, gvr, pageSize, gone)
	if cluster.NotServedYet(live, err) {
		return nil, nil
	}
	if err != nil || len(found.Objects) == 0 {
		return nil, err
	}
	names := found.Objects
	versions := slices.SortedFunc(slices.Values(found.Versions), func(a, b string) int { return -stages.ByPriority(a, b) })
	f := results.Finding{Severity: lifecycle.SeverityError, Kind: results.FindingObjects, CRD: next.Name, Version: strings.Join(versions, ", "),
		Rule: "managedFieldsOfRemovedVersion", Objects: names, Count: len(names), Object: firstNames(names)}
	what := "the new CRD removes"
	for _, v := range versions {
		if stages.SpecVersion(live, v) == nil {
			what = "the CRD no longer has"
		}
	}
	f.Message = fmt.Sprintf("%s carry managedFields entries recorded at %s, which %s: once it is gone, every server-side apply of them (kubectl apply --server-side, a GitOps sync, a controller's apply) fails with \"request to convert CR to an invalid group/version\" until the entries are dropped",
		stages.Objects(int64(len(names))), strings.Join(versions, ", "), what)
	// The fix is the plan toward the release (planned).
	return []results.Finding{f}, nil
}

// firstNames is the first few names and how many more, as grouped findings show them.
func firstNames(names []string) string {
	s := strings.Join(names[:min(len(names), namedObjects)], ", ")
	if len(names) > namedObjects {
		s += fmt.Sprintf(", and %d more", len(names)-namedObjects)
	}
	return s
}
