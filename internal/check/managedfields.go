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

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/usage"
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
		if err != nil || gv.Group != next.Spec.Group || lifecycle.SpecVersion(next, gv.Version) != nil {
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
	versions := slices.SortedFunc(slices.Values(found.Versions), func(a, b string) int { return -lifecycle.ByPriority(a, b) })
	f := results.Finding{Severity: lifecycle.SeverityError, Kind: results.FindingObjects, CRD: next.Name, Version: strings.Join(versions, ", "),
		Rule: "managedFieldsOfRemovedVersion", Objects: names, Count: len(names), Object: firstNames(names)}
	what := "the new CRD removes"
	still := []string{}
	for _, v := range versions {
		if lv := lifecycle.SpecVersion(live, v); lv == nil {
			what = "the CRD no longer has"
		} else if lv.Served {
			still = append(still, v)
		}
	}
	f.Message = fmt.Sprintf("%s carry managedFields entries recorded at %s, which %s: once it is gone, every server-side apply of them (kubectl apply --server-side, a GitOps sync, a controller's apply) fails with \"request to convert CR to an invalid group/version\" until the entries are dropped",
		lifecycle.Objects(int64(len(names))), strings.Join(versions, ", "), what)
	f.Fix = entriesFix(live, next, still)
	return []results.Finding{f}, nil
}

// entriesFix is the way to dropping the entries, in the plugin's commands. The cleanup drops
// entries of unserved versions only, and the step to blocked unserves every version older than
// storage: it comes first only where the release removes all of them; otherwise the entries
// are dropped right after the apply removes their version.
func entriesFix(live, next *apiextensionsv1.CustomResourceDefinition, still []string) []lifecycle.Advice {
	crd, storage := next.Name, lifecycle.StorageVersion(next)
	clean := lifecycle.Advise(lifecycle.CleanManagedFieldsStep(crd), "clean the entries: moved to the storage version while their version is listed (the objects' content is kept)")
	if len(still) == 0 {
		return []lifecycle.Advice{clean, lifecycle.Advise(nil, "then apply the new CRDs")}
	}
	var out []lifecycle.Advice
	liveStorage := lifecycle.StorageVersion(live)
	switch {
	case liveStorage == storage:
		if _, stage, err := lifecycle.PairStage(live, storage); err == nil && stage == lifecycle.StageServed && olderRemoved(live, next, storage) {
			out = append(out, lifecycle.Advise(lifecycle.PromoteToStep(crd, storage, lifecycle.StageDeprecated), "deprecate the versions older than %s", storage))
		}
	case lifecycle.Newer(liveStorage, storage):
		back, ok := stepBack(live, crd, liveStorage, storage)
		if !ok {
			return back
		}
		out = append(out, back...)
	case lifecycle.SpecVersion(live, storage) == nil:
		out = append(out, lifecycle.Advise(lifecycle.IntroduceStep(crd, storage, "NEW_MANIFEST"), "add %s to the live CRD from this manifest", storage),
			lifecycle.Advise(lifecycle.PromoteToStep(crd, storage, lifecycle.StageBridge), "check that every object survives %s→%s→%s", liveStorage, storage, liveStorage),
			lifecycle.Advise(lifecycle.PromoteToStep(crd, storage, lifecycle.StageDeprecated), "make %s the storage version", storage))
	default:
		out = append(out, lifecycle.Advise(lifecycle.PromoteToStep(crd, storage, lifecycle.StageBridge), "check that every object survives %s→%s→%s", liveStorage, storage, liveStorage),
			lifecycle.Advise(lifecycle.PromoteToStep(crd, storage, lifecycle.StageDeprecated), "make %s the storage version", storage))
	}
	if liveStorage != storage || len(live.Status.StoredVersions) > 1 {
		out = append(out, lifecycle.Advise(lifecycle.MigrateStep(crd), "re-store every object at %s and prune the rest from storedVersions", storage))
	}
	if olderRemoved(live, next, storage) && !slices.ContainsFunc(still, func(v string) bool { return !lifecycle.Newer(storage, v) }) {
		return append(out, lifecycle.Advise(lifecycle.PromoteToStep(crd, storage, lifecycle.StageBlocked), "stop serving %s", strings.Join(still, ", ")),
			clean, lifecycle.Advise(nil, "then apply the new CRDs"))
	}
	return append(out, lifecycle.Advise(nil, "then apply the new CRDs, which remove %s (no step of the plugin stops serving just them)", strings.Join(still, ", ")),
		lifecycle.Advise(lifecycle.CleanManagedFieldsStep(crd), "right after, drop the entries: until then a server-side apply of these objects fails"))
}

// olderRemoved says whether next removes every version live serves older than storage.
func olderRemoved(live, next *apiextensionsv1.CustomResourceDefinition, storage string) bool {
	for _, v := range live.Spec.Versions {
		if v.Served && lifecycle.Newer(storage, v.Name) && lifecycle.SpecVersion(next, v.Name) != nil {
			return false
		}
	}
	return true
}

// firstNames is the first few names and how many more, as grouped findings show them.
func firstNames(names []string) string {
	s := strings.Join(names[:min(len(names), namedObjects)], ", ")
	if len(names) > namedObjects {
		s += fmt.Sprintf(", and %d more", len(names)-namedObjects)
	}
	return s
}
