package stages

import "github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"

// The lifecycle's vocabulary is pkg/lifecycle's, read in documents and
// options; this package decides with it.
type (
	Version            = lifecycle.Version
	Severity           = lifecycle.Severity
	Problem            = lifecycle.Problem
	Action             = lifecycle.Action
	Next               = lifecycle.Next
	Assessment         = lifecycle.Assessment
	Condition          = lifecycle.Condition
	Field              = lifecycle.Field
	Change             = lifecycle.Change
	GitOps             = lifecycle.GitOps
	Pair               = lifecycle.Pair
	Plan               = lifecycle.Plan
	Refused            = lifecycle.Refused
	Stage              = lifecycle.Stage
	StaleManagedFields = lifecycle.StaleManagedFields
	Op                 = lifecycle.Op
	Step               = lifecycle.Step
	Advice             = lifecycle.Advice
	StepRecord         = lifecycle.StepRecord
	RecordedChange     = lifecycle.RecordedChange
	Phase              = lifecycle.Phase
	Waypoint           = lifecycle.Waypoint
	Upgrade            = lifecycle.Upgrade
	Verification       = lifecycle.Verification
	WindowKind         = lifecycle.WindowKind
	Window             = lifecycle.Window
)

const (
	SeverityError           = lifecycle.SeverityError
	SeverityWarning         = lifecycle.SeverityWarning
	SeverityNote            = lifecycle.SeverityNote
	ActionRun               = lifecycle.ActionRun
	ActionReady             = lifecycle.ActionReady
	ActionWait              = lifecycle.ActionWait
	ActionNone              = lifecycle.ActionNone
	ActionFix               = lifecycle.ActionFix
	FieldVersion            = lifecycle.FieldVersion
	FieldServed             = lifecycle.FieldServed
	FieldStorage            = lifecycle.FieldStorage
	FieldDeprecated         = lifecycle.FieldDeprecated
	FieldDeprecationWarning = lifecycle.FieldDeprecationWarning
	FieldAnnotation         = lifecycle.FieldAnnotation
	FieldConversion         = lifecycle.FieldConversion
	StageStorage            = lifecycle.StageStorage
	StageIntroduced         = lifecycle.StageIntroduced
	StageBridge             = lifecycle.StageBridge
	StageDeprecated         = lifecycle.StageDeprecated
	StageBlocked            = lifecycle.StageBlocked
	StageServed             = lifecycle.StageServed
	StageMissing            = lifecycle.StageMissing
	OpPromote               = lifecycle.OpPromote
	OpRollback              = lifecycle.OpRollback
	OpMigrate               = lifecycle.OpMigrate
	OpCheck                 = lifecycle.OpCheck
	PhaseBefore             = lifecycle.PhaseBefore
	PhaseApply              = lifecycle.PhaseApply
	PhaseAfter              = lifecycle.PhaseAfter
	WindowServedAgain       = lifecycle.WindowServedAgain
	WindowSwitchCheck       = lifecycle.WindowSwitchCheck
	StageRemoved            = lifecycle.StageRemoved
)

// Stages lists the forward path of a version pair, in order.
var Stages = lifecycle.Stages
