package lifecycle

import (
	"time"
)

// Verification is the record a passed round-trip check leaves on the CRD.
type Verification struct {
	// From is the storage version the objects were converted from and back to.
	From string `json:"from"`
	// Fingerprint covers both versions' schemas and the conversion settings; flag changes (served,
	// storage, deprecated) do not change it, so a rollback to bridge keeps the record.
	Fingerprint string    `json:"fingerprint"`
	Objects     int64     `json:"objects"`
	At          time.Time `json:"at"`
	// Generation is the CRD's at the check; every spec change, a storage switch among them, moves
	// it, so a record of another generation may predate objects written since.
	Generation int64 `json:"generation,omitempty"`
	// ObjectSet hashes every checked object's address, uid and resourceVersion: any write changes it.
	ObjectSet string `json:"objectSet,omitempty"`
}
