package lifecycle

import (
	"encoding/json"
	"time"
)

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
