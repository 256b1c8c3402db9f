package lifecycle

import (
	"encoding/json"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// VerifiedAnnotationPrefix prefixes the annotation, one per version, in which
// `verify` records a passed round-trip check. The CRD state of introduced and
// bridge is otherwise identical, so the record is what tells them apart.
const VerifiedAnnotationPrefix = "crdversion.kubectl.io/verified-"

// Verification is the record a passed round-trip check leaves on the CRD.
type Verification struct {
	// From is the storage version the objects were converted from and back to.
	From string `json:"from"`
	// Generation is the CRD's metadata.generation at the check: a later spec
	// change (a new schema, a new converter) makes the record stale.
	Generation int64     `json:"generation"`
	Objects    int64     `json:"objects"`
	At         time.Time `json:"at"`
}

// VerificationFor returns the recorded check of version v, if one is there.
func VerificationFor(crd *apiextensionsv1.CustomResourceDefinition, v string) (Verification, bool) {
	raw, ok := crd.Annotations[VerifiedAnnotationPrefix+v]
	if !ok {
		return Verification{}, false
	}
	var rec Verification
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return Verification{}, false
	}
	return rec, true
}

// isBridged reports whether v's recorded check still holds: made against the
// current storage version and the CRD generation as it is now.
func isBridged(crd *apiextensionsv1.CustomResourceDefinition, v, storage string) bool {
	rec, ok := VerificationFor(crd, v)
	return ok && rec.From == storage && rec.Generation == crd.Generation
}
