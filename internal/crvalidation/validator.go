// Package crvalidation validates custom resources the way the API server's
// custom resource strategy does, from the same packages it calls.
package crvalidation

import (
	"context"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
)

// Validator validates custom resources the way the API server's custom
// resource strategy does, from the same packages it calls (OpenAPI schema,
// embedded object metadata, list-type invariants, CEL rules, ratcheting),
// without the strategy's own package, which would link the API server's
// storage and etcd client into the plugin. Type and object metadata of
// live objects were validated when they were written and are not checked.
type Validator struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// New is the validator of one version's schema.
func New(internal *apiextensions.JSONSchemaProps) (*Validator, error) {
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return nil, err
	}
	return &Validator{structural: structural, schema: validator, cel: cel.NewValidator(structural, true, celconfig.PerCallLimit)}, nil
}

// Validate is what a create of obj would be refused for.
func (v *Validator) Validate(ctx context.Context, obj map[string]any) field.ErrorList {
	errs := apiservervalidation.ValidateCustomResource(nil, obj, v.schema)
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, obj, v.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj)...)
	return append(errs, v.rules(ctx, errs, obj, nil)...)
}

// Structural is the schema the validator holds, to prune and default by.
func (v *Validator) Structural() *structuralschema.Structural { return v.structural }

// ValidateCreate is what a create of obj would be refused for: the
// schema's defaults applied to a copy first, as the API server applies
// them before it validates.
func (v *Validator) ValidateCreate(ctx context.Context, obj map[string]any) field.ErrorList {
	defaulted := runtime.DeepCopyJSONValue(obj).(map[string]any)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(defaulted, v.structural)
	structuraldefaulting.Default(defaulted, v.structural)
	return v.Validate(ctx, defaulted)
}

// ValidateUpdate is what an update from old to obj would be refused for,
// with validation ratcheting: errors in what did not change are let
// through, except transition rules (they use oldSelf).
func (v *Validator) ValidateUpdate(ctx context.Context, obj, old map[string]any) field.ErrorList {
	correlated := common.NewCorrelatedObject(obj, old, &model.Structural{Structural: v.structural})
	errs := apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, v.schema, apiservervalidation.WithRatcheting(correlated))
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, obj, v.structural, false)...)
	if oldErrs := structurallisttype.ValidateListSetsAndMaps(nil, v.structural, old); len(oldErrs) == 0 {
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj)...)
	}
	return append(errs, v.rules(ctx, errs, obj, old, cel.WithRatcheting(correlated))...)
}

// rules runs the CEL rules unless an earlier error makes them meaningless,
// as the API server does.
func (v *Validator) rules(ctx context.Context, errs field.ErrorList, obj, old map[string]any, opts ...cel.Option) field.ErrorList {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.ErrorList{field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")}
		}
	}
	var oldObj any
	if old != nil {
		oldObj = old
	}
	out, _ := v.cel.Validate(ctx, nil, v.structural, obj, oldObj, celconfig.RuntimeCELCostBudget, opts...)
	return out
}
