package lifecycle

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

// InFile is the same step taken on manifest, offline.
func (s Step) InFile(manifest string) *Step {
	s.File = manifest
	return &s
}

// Advice is a sentence for a person and, when a command of the plugin does it, that command.
type Advice struct {
	Text string `json:"text"`
	// Command is Step as a command line, filled in where the advice is printed, never here.
	Command string `json:"command,omitempty"`
	Step    *Step  `json:"step,omitempty"`
}
