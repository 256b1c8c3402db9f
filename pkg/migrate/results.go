package migrate

import "github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"

// What this package's passes report lives in pkg/results, so pkg/report
// renders it without importing this package; these names keep the types
// where a caller of this package looks for them. The reasons to branch on
// (results.StopInterrupted, results.PrunePruned, results.ProofSchema, ...)
// are in pkg/results.
type (
	Failure       = results.Failure
	RestoreResult = results.RestoreResult
	Result        = results.Result
	StopReason    = results.StopReason
	PruneReason   = results.PruneReason
	Loss          = results.Loss
	VerifyResult  = results.VerifyResult
	FieldDiff     = results.FieldDiff
	ProofKind     = results.ProofKind
	Proof         = results.Proof
	SwitchCheck   = results.SwitchCheck
	StepResult    = results.StepResult
)
