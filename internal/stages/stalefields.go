package stages

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// MayHaveStaleManagedFields says whether the objects can carry entries at an unserved version: that
// takes a spec changed since creation (generation past 1), or objects re-created with managedFields.
func MayHaveStaleManagedFields(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return crd.Generation != 1
}

// StaleVersions sorts the versions of stale entries into those spec.versions lacks and those it
// does not serve, each in priority order; served versions are left out.
func StaleVersions(crd *apiextensionsv1.CustomResourceDefinition, versions []string) (removed, unserved []string) {
	for _, v := range slices.SortedFunc(slices.Values(versions), ByPriority) {
		switch sv := SpecVersion(crd, v); {
		case sv == nil:
			removed = append(removed, v)
		case !sv.Served:
			unserved = append(unserved, v)
		}
	}
	return removed, unserved
}

// staleProblem is an error where apply fails now (versions removed), else a warning.
func staleProblem(s *StaleManagedFields) Problem {
	which := firstOf(s.First, s.Objects)
	carry := "carry"
	if s.Objects == 1 {
		carry = "carries"
	}
	if len(s.Removed) > 0 {
		return Problem{Severity: SeverityError, Version: strings.Join(s.Removed, ", "), Message: fmt.Sprintf(
			"%s (%s) %s managedFields entries recorded at %s, which the CRD no longer has: every server-side apply of them (kubectl apply --server-side, a GitOps sync, a controller's apply) fails with \"request to convert CR to an invalid group/version\" until the entries are cleaned",
			Objects(s.Objects), which, carry, strings.Join(s.Removed, ", "))}
	}
	is, it := "is", "it is"
	if len(s.Unserved) > 1 {
		is, it = "are", "they are"
	}
	return Problem{Severity: SeverityWarning, Version: strings.Join(s.Unserved, ", "), Message: fmt.Sprintf(
		"%s (%s) %s managedFields entries recorded at %s, which %s no longer served: once %s removed from spec.versions, every server-side apply of them fails with \"request to convert CR to an invalid group/version\" until the entries are cleaned",
		Objects(s.Objects), which, carry, strings.Join(s.Unserved, ", "), is, it)}
}

// staleNext cleans the entries: moved to storage while their version is listed, dropped once gone.
func staleNext(crd string, s *StaleManagedFields) Next {
	if len(s.Removed) > 0 {
		return Next{Action: ActionRun, Step: CleanManagedFieldsStep(crd), Reason: fmt.Sprintf(
			"drop the managedFields entries at %s (gone from spec.versions) from %s: server-side apply of them fails until then; after, where an object keeps no entry, its owner's first apply that changes a field conflicts with before-first-apply and takes --force-conflicts once",
			strings.Join(s.Removed, ", "), Objects(s.Objects))}
	}
	return Next{Action: ActionRun, Step: CleanManagedFieldsStep(crd), Reason: fmt.Sprintf(
		"move the managedFields entries at %s (not served) of %s to the storage version before removing it: server-side apply of them would fail after; where a webhook converts they are dropped, and an object that keeps no entry then needs its owner's first apply that changes a field to take --force-conflicts once",
		strings.Join(s.Unserved, ", "), Objects(s.Objects))}
}
