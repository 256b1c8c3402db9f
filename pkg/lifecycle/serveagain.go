package lifecycle

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// PlanServeAgain plans serving old versions again, deprecated, while their
// objects are checked: an object stored at a version no one serves shows
// what only that version's schema holds at no other, so only serving it
// lets a check see it. The step is recorded like any other, so that its
// undo (PlanUndo) takes back exactly what it changed, and a run that was
// interrupted before its undo leaves a step `rollback` takes back.
func PlanServeAgain(crd *apiextensionsv1.CustomResourceDefinition, versions []string) (*Plan, error) {
	storage := StorageVersion(crd)
	if len(versions) == 0 {
		return nil, refuse(nil, "%s: no version to serve again", crd.Name)
	}
	p := &Plan{CRD: crd.Name, Pair: Pair{Old: versions[0], New: storage}, From: StageBlocked, To: StageDeprecated, After: crd.DeepCopy()}
	for _, name := range versions {
		v := SpecVersion(p.After, name)
		switch {
		case v == nil:
			return nil, refuse(nil, "%s: %s is not in spec.versions", crd.Name, name)
		case v.Served || v.Storage:
			return nil, refuse(nil, "%s: %s is served already", crd.Name, name)
		}
		v.Served, v.Deprecated = true, true
	}
	p.Changes = diffVersions(crd, p.After)
	p.Notes = append(p.Notes, Advise(nil, "served again, deprecated, only while each object is checked: %s", strings.Join(versions, ", ")))
	p.record(crd)
	return p, nil
}
