package check

import (
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/crdtest"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"reflect"
)

// crd builds widgets.example.com (crdtest.Widgets).
var crd = crdtest.Widgets

// sameStep: both none, or the same step.
func sameStep(got, want *lifecycle.Step) bool {
	return got == nil && want == nil || got != nil && want != nil && reflect.DeepEqual(*got, *want)
}
