package cluster

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NotCRDError: a name resolved through discovery to a built-in or aggregated resource.
type NotCRDError struct {
	Arg      string
	Resource schema.GroupResource
}

func (e *NotCRDError) Error() string {
	return fmt.Sprintf("%q is %s, which no CustomResourceDefinition defines", e.Arg, e.Resource)
}

// NotFoundError says no CRD answers to a name.
type NotFoundError struct{ Arg string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("customresourcedefinition %q not found", e.Arg)
}

// Resolve finds the CRD a command-line name means, as kubectl would (name, plural, singular,
// short name or kind, optionally .GROUP or .VERSION.GROUP). Discovery is asked only for a
// name no CRD knows, to tell "built-in" from "missing": 500 CRDs cost no discovery.
func Resolve(crds []apiextensionsv1.CustomResourceDefinition, arg string, discover func() (meta.RESTMapper, error)) (*apiextensionsv1.CustomResourceDefinition, error) {
	for i := range crds {
		if crds[i].Name == arg {
			return &crds[i], nil
		}
	}
	var matches []*apiextensionsv1.CustomResourceDefinition
	for i := range crds {
		if answersTo(&crds[i], arg) {
			matches = append(matches, &crds[i])
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
	default:
		names := make([]string, len(matches))
		for i, m := range matches {
			names[i] = m.Name
		}
		return nil, fmt.Errorf("%q is ambiguous, it names %s: use the CRD name", arg, strings.Join(names, ", "))
	}
	if mapper, err := discover(); err == nil {
		if gvr, err := mapper.ResourceFor(schema.ParseGroupResource(arg).WithVersion("")); err == nil {
			for i := range crds {
				if crds[i].Spec.Group == gvr.Group && crds[i].Spec.Names.Plural == gvr.Resource {
					return &crds[i], nil
				}
			}
			return nil, &NotCRDError{Arg: arg, Resource: gvr.GroupResource()}
		}
	}
	return nil, &NotFoundError{Arg: arg}
}

func answersTo(crd *apiextensionsv1.CustomResourceDefinition, arg string) bool {
	name, group, qualified := strings.Cut(arg, ".")
	if qualified && group != crd.Spec.Group && !versionOf(crd, group) {
		return false
	}
	n := crd.Spec.Names
	if strings.EqualFold(name, n.Kind) {
		return true
	}
	name = strings.ToLower(name)
	return name == n.Plural || name == n.Singular || slices.Contains(n.ShortNames, name)
}

// versionOf says whether group is VERSION.GROUP of one of the CRD's versions.
func versionOf(crd *apiextensionsv1.CustomResourceDefinition, group string) bool {
	version, rest, ok := strings.Cut(group, ".")
	return ok && rest == crd.Spec.Group && slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == version })
}

// Select finds the CRDs the names mean (Resolve), in order and each once; no names select
// every CRD. Every command turns its arguments into CRDs this way.
func Select(crds []apiextensionsv1.CustomResourceDefinition, names []string, discover func() (meta.RESTMapper, error)) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	out, missing := SelectFound(crds, names, discover)
	if len(missing) > 0 {
		return nil, missing[0]
	}
	return out, nil
}

// SelectFound is Select going on past names no CRD answers to, as kubectl get does, with why.
func SelectFound(crds []apiextensionsv1.CustomResourceDefinition, names []string, discover func() (meta.RESTMapper, error)) ([]*apiextensionsv1.CustomResourceDefinition, []error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	add := func(crd *apiextensionsv1.CustomResourceDefinition) {
		if !slices.ContainsFunc(out, func(seen *apiextensionsv1.CustomResourceDefinition) bool { return seen.Name == crd.Name }) {
			out = append(out, crd)
		}
	}
	if len(names) == 0 {
		for i := range crds {
			add(&crds[i])
		}
		return out, nil
	}
	var missing []error
	for _, name := range names {
		crd, err := Resolve(crds, name, discover)
		if err != nil {
			missing = append(missing, err)
			continue
		}
		add(crd)
	}
	return out, missing
}
