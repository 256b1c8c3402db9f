package lifecycle

import (
	"encoding/json"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// RefusedAnnotation holds, on the CRD, the objects the last migrate left
// as they are because re-storing them at the storage version would lose
// data. Without it, status would point to the same migrate round after
// round; with it, its next step names the objects, their fields and the
// ways forward. A hint like any annotation: migrate checks every object
// anew whatever it says.
const RefusedAnnotation = "crdversion.kubectl.io/refused"

// Refused is what a migrate left for data loss.
type Refused struct {
	// Storage and Generation are the CRD's when the objects were checked:
	// a record of another generation says nothing of the CRD as it is.
	Storage    string `json:"storage"`
	Generation int64  `json:"generation"`
	Objects    int64  `json:"objects"`
	// First names some of the objects (ns/name) and Fields the fields
	// they would lose, each sorted.
	First  []string  `json:"first"`
	Fields []string  `json:"fields"`
	At     time.Time `json:"at"`
}

// Annotation renders the record as the annotation's value.
func (r Refused) Annotation() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// RefusedFor is the record of the objects a migrate left on crd, if it
// holds for the CRD as it is and a migration is still pending.
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
