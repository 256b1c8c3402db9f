package lifecycle

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// StaleManagedFields is what a list of a CRD's objects found of their
// managedFields entries recorded at a version of the CRD's group that the
// CRD does not serve. Once that version is gone from spec.versions, the
// API server cannot convert such an entry, and every server-side apply of
// the object fails ("request to convert CR to an invalid group/version",
// kubernetes#111937) until the entry is dropped; while the version is
// still in spec.versions, unserved, it converts and breaks nothing yet.
type StaleManagedFields struct {
	// Objects counts the objects that carry such an entry; First names
	// the first of them (namespace/name), in the order listed.
	Objects int64    `json:"objects"`
	First   []string `json:"first"`
	// Removed are the versions the entries name that spec.versions no
	// longer has (server-side apply of those objects fails now); Unserved
	// those it has, not served (it fails once they are removed). Each in
	// version priority order, highest first.
	Removed  []string `json:"removed,omitempty"`
	Unserved []string `json:"unserved,omitempty"`
}

// MayHaveStaleManagedFields says whether the CRD's objects can carry a
// managedFields entry at a version it does not serve, judged from the CRD
// alone, so that status lists objects only where they may: a client records
// the version it wrote at, so an entry at a version not served now needs a
// spec changed since the CRD was created (metadata.generation past 1): a
// version stopped being served, or was removed, which the CRD keeps no
// trace of. A CRD whose spec never changed served every version its
// objects were written at (deleting a CRD deletes its objects). The one
// way past this is a client that sends managedFields itself (objects
// re-created from a dump that kept them): `migrate --all
// --clean-managed-fields` lists every CRD's objects.
func MayHaveStaleManagedFields(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return crd.Generation != 1
}

// StaleVersions sorts the versions of stale entries found on the objects
// of crd into those spec.versions no longer has and those it does not
// serve, each in version priority order; versions it serves are left out.
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

// staleProblem says what the entries break: server-side apply now (an
// error: a client's apply of those objects is refused today), or once the
// unserved versions are removed (a warning).
func staleProblem(s *StaleManagedFields) Problem {
	which := firstOf(s.First, s.Objects)
	carry := "carry"
	if s.Objects == 1 {
		carry = "carries"
	}
	if len(s.Removed) > 0 {
		return Problem{SeverityError, strings.Join(s.Removed, ", "), fmt.Sprintf(
			"%s (%s) %s managedFields entries recorded at %s, which the CRD no longer has: every server-side apply of them (kubectl apply --server-side, a GitOps sync, a controller's apply) fails with \"request to convert CR to an invalid group/version\" until the entries are cleaned",
			Objects(s.Objects), which, carry, strings.Join(s.Removed, ", "))}
	}
	is, it := "is", "it is"
	if len(s.Unserved) > 1 {
		is, it = "are", "they are"
	}
	return Problem{SeverityWarning, strings.Join(s.Unserved, ", "), fmt.Sprintf(
		"%s (%s) %s managedFields entries recorded at %s, which %s no longer served: once %s removed from spec.versions, every server-side apply of them fails with \"request to convert CR to an invalid group/version\" until the entries are cleaned",
		Objects(s.Objects), which, carry, strings.Join(s.Unserved, ", "), is, it)}
}

// staleNext is the step that cleans the entries: moved to the storage
// version while their version is listed, dropped once it is gone.
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
