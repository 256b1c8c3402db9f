package convert

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/crvalidation"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// schemas holds the structural schema of each version of one CRD: what the
// API server prunes an object by when it is written at that version.
type schemas struct {
	crd      *apiextensionsv1.CustomResourceDefinition
	byName   map[string]*structuralschema.Structural
	versions map[string]*apiextensionsv1.CustomResourceDefinitionVersion
	internal map[string]*apiextensions.JSONSchemaProps
	// validators are made when first asked for: most runs validate at
	// one version.
	validators map[string]*crvalidation.Validator
}

func newSchemas(crd *apiextensionsv1.CustomResourceDefinition) (*schemas, error) {
	s := &schemas{crd: crd, byName: map[string]*structuralschema.Structural{}, versions: map[string]*apiextensionsv1.CustomResourceDefinitionVersion{},
		internal: map[string]*apiextensions.JSONSchemaProps{}, validators: map[string]*crvalidation.Validator{}}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		s.versions[v.Name] = v
		props := v.Schema
		if props == nil || props.OpenAPIV3Schema == nil {
			// No schema: nothing is pruned (a CRD the API server would
			// not take today, but a manifest may still say so).
			continue
		}
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(props.OpenAPIV3Schema, internal, nil); err != nil {
			return nil, fmt.Errorf("%s %s: %w", crd.Name, v.Name, err)
		}
		st, err := structuralschema.NewStructural(internal)
		if err != nil {
			return nil, fmt.Errorf("%s %s: the schema is not structural: %w", crd.Name, v.Name, err)
		}
		s.byName[v.Name] = st
		s.internal[v.Name] = internal
	}
	return s, nil
}

// rejected is what the API server would refuse a create of obj at version
// for (its OpenAPI schema and CEL rules, defaults applied first), each
// field error in its words; none when it takes it.
func (s *schemas) rejected(ctx context.Context, obj map[string]any, version string) ([]string, error) {
	internal, ok := s.internal[version]
	if !ok {
		return nil, nil
	}
	v, ok := s.validators[version]
	if !ok {
		var err error
		if v, err = crvalidation.New(internal); err != nil {
			return nil, fmt.Errorf("%s %s: %w", s.crd.Name, version, err)
		}
		s.validators[version] = v
	}
	var out []string
	for _, e := range v.ValidateCreate(ctx, obj) {
		out = append(out, e.Error())
	}
	return out, nil
}

// has says whether the CRD lists the version.
func (s *schemas) has(version string) bool { _, ok := s.versions[version]; return ok }

// prune is obj as the API server keeps it at version: every field its
// schema does not hold dropped.
func (s *schemas) prune(obj map[string]any, version string) map[string]any {
	out := runtime.DeepCopyJSONValue(obj).(map[string]any)
	if st, ok := s.byName[version]; ok && !s.crd.Spec.PreserveUnknownFields {
		pruning.Prune(out, st, true)
	}
	return out
}

// dropped lists the fields of obj that version's schema drops and the
// other version's (when the CRD still has it) keeps: what moving the
// object to version loses by the schemas alone.
func (s *schemas) dropped(obj map[string]any, version, from string) []results.FieldDiff {
	lost := schemacompat.DiffFields("", obj, s.prune(obj, version), nil)
	if !s.has(from) {
		return lost
	}
	already := map[string]bool{}
	for _, d := range schemacompat.DiffFields("", obj, s.prune(obj, from), nil) {
		already[d.Path] = true
	}
	var out []results.FieldDiff
	for _, d := range lost {
		if !already[d.Path] {
			out = append(out, d)
		}
	}
	return out
}

// changedOnTheWayBack lists what a round trip through the converter did
// not bring back: every field of the original (as the old version keeps
// it) missing or different after old→new→old. A field the trip adds is
// not a loss.
func (s *schemas) changedOnTheWayBack(original, back map[string]any, from string) []results.FieldDiff {
	var out []results.FieldDiff
	for _, d := range schemacompat.DiffFields("", s.prune(original, from), s.prune(back, from), nil) {
		if d.Before != results.Absent {
			out = append(out, d)
		}
	}
	return out
}
