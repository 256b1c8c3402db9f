package lifecycle

import "fmt"

// Op is a command of the plugin a Step runs.
type Op string

const (
	OpPromote  Op = "promote"
	OpRollback Op = "rollback"
	OpMigrate  Op = "migrate"
	OpCheck    Op = "check"
)

// Step is a command of the plugin a person is pointed to, held as what it does, not how it is
// spelled. Names in capitals (NEW_VERSION, CRD_MANIFEST, FILE) are placeholders to fill in.
type Step struct {
	Op      Op     `json:"op"`
	CRD     string `json:"crd,omitempty"`
	Version string `json:"version,omitempty"`
	// To is the stage promote takes Version to; empty for the next one.
	To Stage `json:"to,omitempty"`
	// FromFile is the manifest promote takes a new schema from; File one to use instead of the cluster.
	FromFile string `json:"fromFile,omitempty"`
	File     string `json:"file,omitempty"`
	// AgainstFile is the manifests check compares File with, instead of the cluster.
	AgainstFile string `json:"againstFile,omitempty"`
	// CleanManagedFields has migrate also clean managedFields entries at unserved versions;
	// CleanVersions, at these served versions too (a release removes them).
	CleanManagedFields bool     `json:"cleanManagedFields,omitempty"`
	CleanVersions      []string `json:"cleanVersions,omitempty"`
	// All has migrate take every CRD with a migration pending.
	All bool `json:"all,omitempty"`
	// AcceptLoss has migrate re-store objects even where old→new→old loses data, and rollback keep
	// a switch back whose check finds a loss (the objects and fields still named).
	AcceptLoss bool `json:"acceptLoss,omitempty"`
	// ConversionFromFile has promote take FromFile's spec.conversion too.
	ConversionFromFile bool `json:"conversionFromFile,omitempty"`
	// SwitchStorage has rollback switch storage back where no step of the plugin switched it away.
	SwitchStorage bool `json:"switchStorage,omitempty"`
	// Context is the kubeconfig context the step is for: pasted, it must not run against another.
	Context string `json:"context,omitempty"`
}

// On is the same step against the cluster of kubeconfig context name.
func (s Step) On(name string) *Step {
	s.Context = name
	return &s
}

// On is the advice with its step against the cluster of context name.
func (a Advice) On(name string) Advice {
	if a.Step != nil {
		a.Step = a.Step.On(name)
	}
	return a
}

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

// InFile is the same step taken on manifest, offline.
func (s Step) InFile(manifest string) *Step {
	s.File = manifest
	return &s
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

// Advice is a sentence for a person and, when a command of the plugin does it, that command.
type Advice struct {
	Text string `json:"text"`
	// Command is Step as a command line, filled in where the advice is printed, never here.
	Command string `json:"command,omitempty"`
	Step    *Step  `json:"step,omitempty"`
}

// Advise is advice in words, with the step that takes it (nil: none).
func Advise(step *Step, format string, args ...any) Advice {
	return Advice{Text: fmt.Sprintf(format, args...), Step: step}
}
