package lifecycle

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Plan is one lifecycle step: the field changes it makes and the CRD after.
type Plan struct {
	CRD     string   `json:"crd"`
	Pair    Pair     `json:"pair"`
	From    Stage    `json:"from"`
	To      Stage    `json:"to"`
	Changes []Change `json:"changes"`
	// Notes say what the step means for objects and clients, and what next.
	Notes []Advice `json:"notes,omitempty"`
	// After is the CRD with the step applied; nil only for refusals.
	After *apiextensionsv1.CustomResourceDefinition `json:"-"`
	// Record is what a step forward recorded on After; Restored, the record a step back took back.
	Record   *StepRecord `json:"-"`
	Restored *StepRecord `json:"-"`
}
