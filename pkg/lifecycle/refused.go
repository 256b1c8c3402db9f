package lifecycle

import (
	"encoding/json"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// RefusedAnnotation holds the objects the last migrate left as re-storing them would lose data, so
// status names the ways forward, not the same migrate. A hint: migrate checks every object anew.
const RefusedAnnotation = "crdversion.kubectl.io/refused"

// Refused is what a migrate left for data loss.
type Refused struct {
	// Storage and Generation are the CRD's at the check: another generation's record says nothing.
	Storage    string `json:"storage"`
	Generation int64  `json:"generation"`
	Objects    int64  `json:"objects"`
	// First names some objects (ns/name), Fields the fields they would lose; each sorted.
	First  []string  `json:"first"`
	Fields []string  `json:"fields"`
	At     time.Time `json:"at"`
	// To is, for a switch back (SwitchBackAnnotation), the version it would have made storage;
	// Accepted, that the switch stands, the loss accepted by name (Storage is then To).
	To       string `json:"to,omitempty"`
	Accepted bool   `json:"accepted,omitempty"`
}

// Annotation renders the record as the annotation's value.
func (r Refused) Annotation() string {
	b, _ := json.Marshal(r)
	return string(b)
}

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
