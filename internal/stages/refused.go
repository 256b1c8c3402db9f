package stages

import (
	"encoding/json"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// RefusedAnnotation holds the objects the last migrate left as re-storing them would lose data, so
// status names the ways forward, not the same migrate. A hint: migrate checks every object anew.
const RefusedAnnotation = "crdversion.kubectl.io/refused"

// RefusedFor is the record on crd, if it holds for the CRD as it is and a migration is pending.
func RefusedFor(crd *apiextensionsv1.CustomResourceDefinition) *Refused {
	raw, ok := crd.Annotations[RefusedAnnotation]
	if !ok || !MigrationPending(crd) {
		return nil
	}
	var r Refused
	if json.Unmarshal([]byte(raw), &r) != nil || r.Generation != crd.Generation || r.Storage != StorageVersion(crd) || r.Objects == 0 {
		return nil
	}
	return &r
}

// SwitchBackAnnotation holds what the last switch back (rollback --switch-storage) found its
// objects would lose: undone, so the plan names the ways on, not the same switch back; or
// accepted by name, so the re-store after it takes the same loss without asking twice. A hint:
// every switch back and every re-store checks every object anew.
const SwitchBackAnnotation = "crdversion.kubectl.io/switch-back-loss"

// SwitchBackRefusedFor is the record of a switch back undone for a loss, if it holds for the CRD
// as it is (its generation, storage still the version the switch left).
func SwitchBackRefusedFor(crd *apiextensionsv1.CustomResourceDefinition) *Refused {
	r := switchBackRecord(crd)
	if r == nil || r.Accepted || r.To == "" || SpecVersion(crd, r.To) == nil {
		return nil
	}
	return r
}

// LossAcceptedFor is the record of a switch back that stands despite a loss accepted by name, if
// it holds for the CRD as it is and objects are still to be re-stored.
func LossAcceptedFor(crd *apiextensionsv1.CustomResourceDefinition) *Refused {
	r := switchBackRecord(crd)
	if r == nil || !r.Accepted || !MigrationPending(crd) {
		return nil
	}
	return r
}

func switchBackRecord(crd *apiextensionsv1.CustomResourceDefinition) *Refused {
	raw, ok := crd.Annotations[SwitchBackAnnotation]
	if !ok {
		return nil
	}
	var r Refused
	if json.Unmarshal([]byte(raw), &r) != nil || r.Generation != crd.Generation || r.Storage != StorageVersion(crd) || r.Objects == 0 {
		return nil
	}
	return &r
}
