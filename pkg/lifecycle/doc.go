// Package lifecycle is the vocabulary of a CRD version's lifecycle, as the
// commands' documents and pkg/migrate's options use it: the stages a version
// moves through (Stages), where each version of a CRD stands and the next
// step (Assessment, as status -o json prints it), a step's plan and the
// commands the plugin points to (Plan, Step, Advice), and the plan toward a
// release (Upgrade). The decisions themselves are the plugin's: a program
// reads them from a command's -o json output (pkg/report), or from what
// pkg/migrate returns.
package lifecycle
