package lifecycle

// WindowKind says what a run still owes after a step it took for its own work.
type WindowKind string

const (
	// WindowServedAgain: old versions served again, deprecated, for migrate's checks; the run
	// unserves them after. Undone exactly as recorded.
	WindowServedAgain WindowKind = "servedAgain"
	// WindowSwitchCheck: a storage switch whose old→new→old check has not finished; the check
	// keeps it or switches back.
	WindowSwitchCheck WindowKind = "switchCheck"
)

// Window is a step whose run has not finished it: killed (kill -9, a node lost), the run left
// its record on the CRD, and the next command that touches the CRD closes it first.
type Window struct {
	CRD  string     `json:"crd"`
	Kind WindowKind `json:"kind"`
	// Versions are the versions served again, or the one the switch took storage from.
	Versions []string `json:"versions"`
	// Record is the step that opened it.
	Record StepRecord `json:"record"`
}

// Step is the command that closes the window: migrate closes any before it does anything else.
func (w *Window) Step() *Step { return &Step{Op: OpMigrate, CRD: w.CRD} }

// StepBack says whether the window is a step back's switch (rollback --switch-storage): a step
// forward never ends at introduced or bridge with a storage switch.
func (w *Window) StepBack() bool {
	return w.Kind == WindowSwitchCheck && (w.Record.To == StageIntroduced || w.Record.To == StageBridge)
}
