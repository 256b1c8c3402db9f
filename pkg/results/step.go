package results

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// SwitchCheck is what checking a storage switch found.
type SwitchCheck struct {
	Proofs []Proof `json:"proofs"`
	// Back is the step that switched the storage version back, when a proof
	// failed.
	Back *StepResult `json:"-"`
}

// Holds reports a switch whose objects may all be re-stored without loss.
func (s *SwitchCheck) Holds() bool {
	for _, p := range s.Proofs {
		if !p.Holds() {
			return false
		}
	}
	return true
}

// StepResult is a planned (and, unless dry-run=client, written) step.
type StepResult struct {
	Plan *lifecycle.Plan
	// Before is the CRD the final plan was made from.
	Before *apiextensionsv1.CustomResourceDefinition
	// After is the CRD as the API server returned it (dry-run=server: as it
	// would be), or the plan's result with dry-run=client.
	After *apiextensionsv1.CustomResourceDefinition
	// Replans counts conflicts that made the step re-read and re-plan.
	Replans int
	// FieldsKept says why spec fields the step took from their owners are
	// still the plugin's (the owners' next server-side apply conflicts
	// with it); empty when they went back.
	FieldsKept string
}

// PromoteResult is a step taken, with what the passes around it found.
type PromoteResult struct {
	*StepResult
	// Verify is the round-trip check the bridge step ran first.
	Verify *VerifyResult
	// Switch is the old→new→old check after a storage switch (deprecated).
	Switch *SwitchCheck
	// ManagedFields is the cleanup after the removed step.
	ManagedFields *RestoreResult
	// Reused is verify's recorded check the bridge step took instead of its own.
	Reused *lifecycle.Verification
	// Overridden are clients still using an unserved version, let through by PromoteOptions.DespiteClients.
	Overridden []Client
}

// RollbackResult is a step taken back, with the check after a switch back.
type RollbackResult struct {
	*StepResult
	// Switch is the new→old→new check after switching storage back.
	Switch *SwitchCheck
	// LossAccepted: the check found losses and the switch stands, as RollbackOptions.AcceptLoss asked.
	LossAccepted bool
}
