package lifecycle

import (
	"fmt"
)

// Version is one version of a CRD as status shows it.
type Version struct {
	Name       string `json:"name"`
	Served     bool   `json:"served"`
	Storage    bool   `json:"storage"`
	Deprecated bool   `json:"deprecated"`
	// DeprecationWarning is what clients receive: the CRD's own or the API server's default.
	DeprecationWarning string `json:"deprecationWarning,omitempty"`
	// Stored: listed in status.storedVersions, so objects may still be stored at it.
	Stored bool `json:"stored"`
	// InSpec is false for a storedVersions entry missing from spec.versions.
	InSpec bool  `json:"inSpec"`
	Stage  Stage `json:"stage"`
}

// Severity says how urgent a Problem is.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	// SeverityNote: worth knowing, nothing will fail.
	SeverityNote Severity = "note"
)

// Problem is something about a CRD's versions a person should know.
type Problem struct {
	Severity Severity `json:"severity"`
	Version  string   `json:"version,omitempty"`
	Message  string   `json:"message"`
}

// Action classifies the next step.
type Action string

const (
	// ActionRun: something is pending and the command fixes it.
	ActionRun Action = "run"
	// ActionReady: the CRD is consistent and may move on with the command.
	ActionReady Action = "ready"
	// ActionWait: someone else (the cluster's migrator) is at work.
	ActionWait Action = "wait"
	// ActionNone: nothing to do.
	ActionNone Action = "none"
	// ActionFix: the CRD itself is wrong (the API server would refuse it); no command takes it further.
	ActionFix Action = "fix"
)

// Next is the step a person can act on.
type Next struct {
	Action Action `json:"action"`
	// Command is Step as a command line, filled in where status is printed, never here.
	Command string `json:"command,omitempty"`
	Reason  string `json:"reason"`
	Step    *Step  `json:"step,omitempty"`
}

// InFile is the next step for a CRD read from a manifest: a file shows no objects, so introduced
// moves on to deprecated, its plan naming the bridge check to run on the cluster first.
func (n Next) InFile(manifest string) Next {
	s := n.Step
	if s == nil || s.Op != OpPromote {
		return n
	}
	if s.To == StageBridge {
		n.Reason = fmt.Sprintf("make %s the storage version in the file; its plan names the bridge check to run on the cluster first", s.Version)
		n.Step = &Step{Op: OpPromote, CRD: s.CRD, Version: s.Version, To: StageDeprecated}
	}
	n.Step = n.Step.InFile(manifest)
	return n
}

// Assessment is everything status says about one CRD.
type Assessment struct {
	Name           string   `json:"name"`
	Group          string   `json:"group"`
	Kind           string   `json:"kind"`
	Resource       string   `json:"resource"`
	Scope          string   `json:"scope"`
	Conversion     string   `json:"conversion"`
	StorageVersion string   `json:"storageVersion"`
	StoredVersions []string `json:"storedVersions"`
	// Migrating: the cluster's storage version migrator reports StorageMigrating=True.
	Migrating          bool       `json:"migrating"`
	MigratingCondition *Condition `json:"storageMigratingCondition,omitempty"`
	// Versions are in priority order, highest first, including storedVersions entries not in spec.
	Versions []Version `json:"versions"`
	Problems []Problem `json:"problems"`
	// GitOps is the tool syncing the CRD from Git, if any: the next step is then made in its manifest.
	GitOps *GitOps `json:"gitOps,omitempty"`
	// Refused is what the last migrate left for data loss, while it holds for the CRD as it is.
	Refused *Refused `json:"refused,omitempty"`
	// StaleManagedFields is what status found of managedFields entries at unserved versions.
	StaleManagedFields *StaleManagedFields `json:"staleManagedFields,omitempty"`
	// NotServed says why the API server serves none of the CRD's objects; "" where it serves them.
	NotServed string `json:"notServed,omitempty"`
	// Window is a step a killed run left open (a version served again, a switch not yet checked).
	Window *Window `json:"window,omitempty"`
	Next   Next    `json:"next"`
}

// Pending lists the versions besides storage that objects may still be stored at.
func (a Assessment) Pending() []string {
	var out []string
	for _, v := range a.Versions {
		if v.Stored && !v.Storage {
			out = append(out, v.Name)
		}
	}
	return out
}

// Condition is a CRD condition as a person reads it.
type Condition struct {
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}
