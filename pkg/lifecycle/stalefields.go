package lifecycle

// StaleManagedFields is what a CRD's objects carry of managedFields entries at unserved versions:
// once one leaves spec.versions, server-side apply fails until the entry goes (kubernetes#111937).
type StaleManagedFields struct {
	// Objects counts the objects with such entries; First names the first (namespace/name).
	Objects int64    `json:"objects"`
	First   []string `json:"first"`
	// Removed are the entries' versions gone from spec.versions (apply fails now), Unserved those
	// still there unserved (it fails once removed); each highest priority first.
	Removed  []string `json:"removed,omitempty"`
	Unserved []string `json:"unserved,omitempty"`
}
