package stages

import "fmt"

// PromoteStep is the step that moves version one stage along.
func PromoteStep(crd, version string) *Step {
	return &Step{Op: OpPromote, CRD: crd, Version: version}
}

// PromoteToStep is the step that moves version to stage to.
func PromoteToStep(crd, version string, to Stage) *Step {
	return &Step{Op: OpPromote, CRD: crd, Version: version, To: to}
}

// IntroduceStep is the step that adds version with its schema from manifest.
func IntroduceStep(crd, version, manifest string) *Step {
	return &Step{Op: OpPromote, CRD: crd, Version: version, FromFile: manifest}
}

// PromoteFileStep is the step that takes the next step in manifest, offline.
func PromoteFileStep(manifest string) *Step {
	return &Step{Op: OpPromote, File: manifest}
}

// SwitchStorageBackStep is the step that switches storage from version back to the one below it.
func SwitchStorageBackStep(crd, version string) *Step {
	return &Step{Op: OpRollback, CRD: crd, Version: version, SwitchStorage: true}
}

// MigrateStep is the step that re-stores every object at storage and prunes storedVersions.
func MigrateStep(crd string) *Step {
	return &Step{Op: OpMigrate, CRD: crd}
}

// MigrateAllStep is the step that migrates every CRD with a migration pending.
func MigrateAllStep() *Step {
	return &Step{Op: OpMigrate, All: true}
}

// CleanManagedFieldsStep is the step that migrates and cleans entries at unserved versions.
func CleanManagedFieldsStep(crd string) *Step {
	return &Step{Op: OpMigrate, CRD: crd, CleanManagedFields: true}
}

// CheckFileStep is the step that checks the upgrade to manifest.
func CheckFileStep(manifest string) *Step {
	return &Step{Op: OpCheck, File: manifest}
}

// CheckAgainstStep is the step that checks the upgrade from the manifests old to manifest, offline.
func CheckAgainstStep(manifest, old string) *Step {
	return &Step{Op: OpCheck, File: manifest, AgainstFile: old}
}

// Advise is advice in words, with the step that takes it (nil: none).
func Advise(step *Step, format string, args ...any) Advice {
	return Advice{Text: fmt.Sprintf(format, args...), Step: step}
}
