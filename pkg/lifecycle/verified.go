package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// VerifiedAnnotationPrefix prefixes the annotation, one per version, in which
// a passed round-trip check is recorded. The CRD state of introduced and
// bridge is otherwise identical, so the record is what tells them apart.
const VerifiedAnnotationPrefix = "crdversion.kubectl.io/verified-"

// Verification is the record a passed round-trip check leaves on the CRD.
type Verification struct {
	// From is the storage version the objects were converted from and back to.
	From string `json:"from"`
	// Fingerprint covers what decides whether a round trip is lossless: both
	// versions' schemas and the conversion settings. Any change to them makes
	// the record stale; flag changes (served, storage, deprecated) do not, so a
	// rollback to bridge keeps it.
	Fingerprint string    `json:"fingerprint"`
	Objects     int64     `json:"objects"`
	At          time.Time `json:"at"`
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

// Fingerprint hashes the schemas of versions a and b and the CRD's
// conversion settings.
func Fingerprint(crd *apiextensionsv1.CustomResourceDefinition, a, b string) string {
	part := func(name string) any {
		if v := specVersion(crd, name); v != nil {
			return []any{v.Name, v.Schema, v.Subresources}
		}
		return nil
	}
	raw, _ := json.Marshal([]any{part(a), part(b), crd.Spec.Conversion, crd.Spec.PreserveUnknownFields})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// isBridged reports whether v's recorded check still holds: made against the
// current storage version with the schemas and conversion as they are now.
func isBridged(crd *apiextensionsv1.CustomResourceDefinition, v, storage string) bool {
	rec, ok := VerificationFor(crd, v)
	return ok && rec.From == storage && rec.Fingerprint == Fingerprint(crd, storage, v)
}
