package results

// Failure is one object the migration could not re-store.
type Failure struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Code      int32  `json:"code"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
}

// ReasonChangedByWrite marks, among the failures, an object that a write
// meant to change nothing did change.
const ReasonChangedByWrite = "ChangedByWrite"
