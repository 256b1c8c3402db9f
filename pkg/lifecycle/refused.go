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
