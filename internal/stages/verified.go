package stages

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// VerifiedAnnotationPrefix prefixes the per-version record of a passed round-trip check: v's, with
// From s, says every object read at v came back intact through storage s. Before the switch it alone
// tells bridge from introduced; after, on the old version, it covers what re-storing makes permanent.
const VerifiedAnnotationPrefix = "crdversion.kubectl.io/verified-"

// CheckedAnnotationPrefix prefixes verify's per-version record of a passed v→storage→v check. It
// moves no stage; promote --to bridge takes it instead of checking again while it holds (CheckFor).
const CheckedAnnotationPrefix = "crdversion.kubectl.io/checked-"

// VerificationFor returns the recorded check of version v, if one is there.
func VerificationFor(crd *apiextensionsv1.CustomResourceDefinition, v string) (Verification, bool) {
	return recordAt(crd, VerifiedAnnotationPrefix+v)
}

// CheckFor returns verify's check of v if it holds for the CRD as it is; the caller compares ObjectSet.
func CheckFor(crd *apiextensionsv1.CustomResourceDefinition, v string) (Verification, bool) {
	rec, ok := recordAt(crd, CheckedAnnotationPrefix+v)
	storage := StorageVersion(crd)
	return rec, ok && rec.ObjectSet != "" && rec.From == storage && rec.Fingerprint == Fingerprint(crd, storage, v) && rec.Generation == crd.Generation
}

func recordAt(crd *apiextensionsv1.CustomResourceDefinition, key string) (Verification, bool) {
	raw, ok := crd.Annotations[key]
	if !ok {
		return Verification{}, false
	}
	var rec Verification
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return Verification{}, false
	}
	return rec, true
}

// Fingerprint hashes the schemas of versions a and b and the CRD's conversion settings.
func Fingerprint(crd *apiextensionsv1.CustomResourceDefinition, a, b string) string {
	part := func(name string) any {
		if v := SpecVersion(crd, name); v != nil {
			return []any{v.Name, v.Schema, v.Subresources}
		}
		return nil
	}
	raw, _ := json.Marshal([]any{part(a), part(b), crd.Spec.Conversion, crd.Spec.PreserveUnknownFields})
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// ValidVerification returns v's check if made through current storage, schemas and conversion.
func ValidVerification(crd *apiextensionsv1.CustomResourceDefinition, v string) (Verification, bool) {
	storage := StorageVersion(crd)
	rec, ok := VerificationFor(crd, v)
	return rec, ok && rec.From == storage && rec.Fingerprint == Fingerprint(crd, storage, v)
}

func annotation(rec Verification, key string) (string, string) {
	if rec.At.IsZero() {
		rec.At = time.Now().UTC()
	}
	raw, _ := json.Marshal(rec)
	return key, string(raw)
}

func isBridged(crd *apiextensionsv1.CustomResourceDefinition, v, storage string) bool {
	_, ok := ValidVerification(crd, v)
	return ok && StorageVersion(crd) == storage
}

// VerifiedAnnotation is the key and value that record rec as the check of v.
func VerifiedAnnotation(rec Verification, v string) (string, string) {
	return annotation(rec, VerifiedAnnotationPrefix+v)
}

// CheckAnnotation is the key and value that record rec as verify's check of v.
func CheckAnnotation(rec Verification, v string) (string, string) {
	return annotation(rec, CheckedAnnotationPrefix+v)
}
