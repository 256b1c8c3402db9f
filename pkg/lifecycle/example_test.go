package lifecycle_test

import (
	"fmt"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// A version pair moves along Stages one step at a time. Every step but the
// bridge edits spec.versions, which a GitOps tool that syncs the CRD would
// revert: those steps go into the manifest it syncs.
func ExampleStage() {
	for _, s := range lifecycle.Stages {
		fmt.Printf("%-10s edits spec.versions: %v\n", s, s.EditsVersions())
	}
	// Output:
	// introduced edits spec.versions: true
	// bridge     edits spec.versions: false
	// deprecated edits spec.versions: true
	// blocked    edits spec.versions: true
	// removed    edits spec.versions: true
}
