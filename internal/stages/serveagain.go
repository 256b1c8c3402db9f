package stages

import (
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// PlanServeAgain plans serving old versions again, deprecated, while their objects are checked (only a
// served version shows what its schema alone holds); recorded like any step, for its undo.
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
	record(p, crd)
	// Its run unserves them after the check; killed before, the next command does.
	MarkOpen(p, WindowServedAgain)
	return p, nil
}
