package schemacompat

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// SchemaProof says whether the schemas alone prove that every object valid at
// version old survives old→new→old unchanged (conversion None), and why not.
//
// With conversion None the API server only rewrites apiVersion, then prunes
// what the target version's structural schema does not list and drops nulls
// the target does not allow. So it suffices that new keeps everything old's
// schema lets an object hold; the way back to old then keeps it too. The proof
// is conservative: anything it cannot show from the schemas is "not proven",
// with the first JSON path (in sorted order) that stopped it, so a person can
// see what to run the round-trip check for. Validation (enum, pattern, CEL,
// required) is left out on purpose: an object that breaks a rule of new is a
// rejected write, not a silent loss. A default new adds is not proven: it
// fills in a field the object did not have.
// reason is always set, for proven too.
func SchemaProof(crd *apiextensionsv1.CustomResourceDefinition, old, new string) (proven bool, reason string) {
	if c := crd.Spec.Conversion; c != nil && c.Strategy == apiextensionsv1.WebhookConverter {
		return false, "conversion is Webhook: only the webhook knows"
	} else if c != nil && c.Strategy != "" && c.Strategy != apiextensionsv1.NoneConverter {
		return false, fmt.Sprintf("conversion is %s: only None can be proven from the schemas", c.Strategy)
	}
	if crd.Spec.PreserveUnknownFields {
		return false, "spec.preserveUnknownFields is true: the server does not prune by the schemas, so they prove nothing"
	}
	ov, nv := specVersion(crd, old), specVersion(crd, new)
	switch {
	case ov == nil:
		return false, fmt.Sprintf("%s is not in spec.versions", old)
	case nv == nil:
		return false, fmt.Sprintf("%s is not in spec.versions", new)
	case old == new:
		return true, "same version: nothing is converted"
	}
	os, ns := VersionSchema(ov), VersionSchema(nv)
	switch {
	case os == nil && ns == nil:
		return true, "neither version has a schema"
	case os == nil:
		return false, fmt.Sprintf("%s has no schema, %s has one: it prunes what %s's objects hold beyond it", old, new, old)
	case ns == nil:
		return false, fmt.Sprintf("%s has a schema, %s has none", old, new)
	}
	p := proof{old: old, new: new}
	// The root is a resource root: the server handles apiVersion, kind and
	// metadata itself and never prunes them by the schema.
	if r := p.node("", os, ns, true); r != "" {
		return false, r
	}
	// An object without the field comes back with new's default filled in,
	// and a write at new persists it: nothing lost, but the object changed.
	if d := DefaultsAdded(crd, old, new); len(d) > 0 {
		return false, fmt.Sprintf("%s: a default in %s's schema that %s's lacks fills the field in on the way", d[0], new, old)
	}
	return true, fmt.Sprintf("%s's schema keeps every field %s's schema allows", new, old)
}

// DefaultsAdded lists, in sorted order, the fields at which new's schema
// sets a default that old's does not set there, anywhere in the schema
// (fields old lacks included): a write at new fills them into an object
// stored at old, where a read showed them already.
func DefaultsAdded(crd *apiextensionsv1.CustomResourceDefinition, old, new string) []string {
	ov, nv := specVersion(crd, old), specVersion(crd, new)
	if ov == nil || nv == nil || VersionSchema(nv) == nil {
		return nil
	}
	var out []string
	addedDefaults("", VersionSchema(ov), VersionSchema(nv), &out)
	slices.Sort(out)
	return out
}

// addedDefaults walks new's schema n beside old's o (nil where old has
// nothing at path).
func addedDefaults(path string, o, n *apiextensionsv1.JSONSchemaProps, out *[]string) {
	if n.Default != nil && (o == nil || o.Default == nil || !bytes.Equal(o.Default.Raw, n.Default.Raw)) {
		*out = append(*out, display(path))
	}
	for k, nk := range n.Properties {
		var ok *apiextensionsv1.JSONSchemaProps
		if o != nil {
			if v, found := o.Properties[k]; found {
				ok = &v
			}
		}
		addedDefaults(child(path, k), ok, &nk, out)
	}
	if n.Items != nil && n.Items.Schema != nil {
		var oi *apiextensionsv1.JSONSchemaProps
		if o != nil && o.Items != nil {
			oi = o.Items.Schema
		}
		addedDefaults(path+"[*]", oi, n.Items.Schema, out)
	}
	if n.AdditionalProperties != nil && n.AdditionalProperties.Schema != nil {
		var oa *apiextensionsv1.JSONSchemaProps
		if o != nil && o.AdditionalProperties != nil {
			oa = o.AdditionalProperties.Schema
		}
		addedDefaults(path+".*", oa, n.AdditionalProperties.Schema, out)
	}
}

// VersionSchema is v's OpenAPI schema, or nil where it has none.
func VersionSchema(v *apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.JSONSchemaProps {
	if v.Schema == nil {
		return nil
	}
	return v.Schema.OpenAPIV3Schema
}

// metaFields are what pruning skips at a resource root and at every
// x-kubernetes-embedded-resource node.
var metaFields = map[string]bool{"apiVersion": true, "kind": true, "metadata": true}

type proof struct{ old, new string }

// node compares old's schema o with new's schema n at path and returns the
// first reason n may lose something o allows, or "".
func (p proof) node(path string, o, n *apiextensionsv1.JSONSchemaProps, resourceRoot bool) string {
	at := display(path)
	oPreserve, nPreserve := isTrue(o.XPreserveUnknownFields), isTrue(n.XPreserveUnknownFields)
	switch {
	case o.Type != n.Type:
		return fmt.Sprintf("%s: type %s in %s's schema, %s in %s's", at, typeName(o.Type), p.old, typeName(n.Type), p.new)
	case o.Type == "" && !o.XIntOrString && !oPreserve:
		// Not structural: there is no telling what pruning does with it.
		return fmt.Sprintf("%s: no type in %s's schema and neither x-kubernetes-int-or-string nor x-kubernetes-preserve-unknown-fields", at, p.old)
	case o.XIntOrString != n.XIntOrString:
		return fmt.Sprintf("%s: x-kubernetes-int-or-string is %t in %s's schema, %t in %s's", at, o.XIntOrString, p.old, n.XIntOrString, p.new)
	case o.XEmbeddedResource != n.XEmbeddedResource:
		return fmt.Sprintf("%s: x-kubernetes-embedded-resource is %t in %s's schema, %t in %s's", at, o.XEmbeddedResource, p.old, n.XEmbeddedResource, p.new)
	case oPreserve && !nPreserve:
		return fmt.Sprintf("%s: x-kubernetes-preserve-unknown-fields in %s's schema, not in %s's", at, p.old, p.new)
	case o.Nullable && !n.Nullable:
		return fmt.Sprintf("%s: nullable in %s's schema, not in %s's", at, p.old, p.new)
	}
	skipMeta := resourceRoot || o.XEmbeddedResource

	for _, k := range slices.Sorted(maps.Keys(o.Properties)) {
		if skipMeta && metaFields[k] {
			continue
		}
		ok := o.Properties[k]
		kp := child(path, k)
		if nk, found := n.Properties[k]; found {
			if r := p.node(kp, &ok, &nk, false); r != "" {
				return r
			}
			continue
		}
		// Pruning falls back to additionalProperties before it looks at
		// x-kubernetes-preserve-unknown-fields, so the order matters here.
		switch {
		case n.AdditionalProperties != nil && n.AdditionalProperties.Schema != nil:
			if r := p.node(kp, &ok, n.AdditionalProperties.Schema, false); r != "" {
				return r
			}
		case n.AdditionalProperties != nil:
			// A map value without a schema loses every field of its objects.
			return fmt.Sprintf("%s: in %s's schema, in %s's only as a map value without a schema", kp, p.old, p.new)
		case nPreserve:
			// Kept whole: pruning does not descend into fields new does not list.
		default:
			return fmt.Sprintf("%s: in %s's schema, not in %s's", kp, p.old, p.new)
		}
	}

	if oPreserve {
		// old kept any field here unchecked; wherever new checks one, it
		// prunes by a schema old's objects never had to follow.
		for _, k := range slices.Sorted(maps.Keys(n.Properties)) {
			if _, listed := o.Properties[k]; listed || (skipMeta && metaFields[k]) {
				continue
			}
			return fmt.Sprintf("%s: kept unchecked by %s's x-kubernetes-preserve-unknown-fields, pruned by its schema in %s's", child(path, k), p.old, p.new)
		}
		if o.AdditionalProperties == nil && n.AdditionalProperties != nil {
			return fmt.Sprintf("%s: unknown fields kept by %s's x-kubernetes-preserve-unknown-fields, pruned by additionalProperties in %s's", at, p.old, p.new)
		}
		if o.Items == nil && n.Items != nil {
			return fmt.Sprintf("%s: array items kept unchecked by %s's x-kubernetes-preserve-unknown-fields, pruned by items in %s's", at, p.old, p.new)
		}
	}

	if r := p.items(path, o.Items, n.Items); r != "" {
		return r
	}
	return p.additional(path, o.AdditionalProperties, n.AdditionalProperties)
}

func (p proof) items(path string, o, n *apiextensionsv1.JSONSchemaPropsOrArray) string {
	at := display(path)
	switch {
	case o == nil:
		return ""
	case len(o.JSONSchemas) > 0 || (n != nil && len(n.JSONSchemas) > 0):
		return fmt.Sprintf("%s: items is a list of schemas, which is not structural", at)
	case o.Schema == nil:
		return ""
	case n == nil || n.Schema == nil:
		return fmt.Sprintf("%s: items in %s's schema, not in %s's", at, p.old, p.new)
	}
	return p.node(path+"[*]", o.Schema, n.Schema, false)
}

func (p proof) additional(path string, o, n *apiextensionsv1.JSONSchemaPropsOrBool) string {
	at := display(path)
	// additionalProperties: false holds no keys, so there is nothing to keep.
	if o == nil || (!o.Allows && o.Schema == nil) {
		return ""
	}
	switch {
	case n == nil || (!n.Allows && n.Schema == nil):
		return fmt.Sprintf("%s: additionalProperties in %s's schema, not in %s's", at, p.old, p.new)
	case o.Schema != nil && n.Schema == nil:
		// Pruning by no schema empties every object a map value holds.
		return fmt.Sprintf("%s: additionalProperties has a schema in %s's schema, none in %s's", at, p.old, p.new)
	case o.Schema == nil && n.Schema != nil:
		return fmt.Sprintf("%s: additionalProperties has no schema in %s's schema, one in %s's", at, p.old, p.new)
	case o.Schema == nil:
		return ""
	}
	return p.node(path+".*", o.Schema, n.Schema, false)
}

var plainKey = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

// child is path's property k in the dotted form people write, bracketed
// as JSONPath does (metadata.annotations['a.b/c']) where k would not read
// as one name.
func child(path, k string) string {
	if !plainKey.MatchString(k) {
		return path + "['" + k + "']"
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

func display(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

func typeName(t string) string {
	if t == "" {
		return "unset"
	}
	return t
}

func isTrue(b *bool) bool { return b != nil && *b }

// SchemaOf is version v's schema, or nil: it tells the diff which lists
// are keyed.
func SchemaOf(crd *apiextensionsv1.CustomResourceDefinition, v string) *apiextensionsv1.JSONSchemaProps {
	for _, ver := range crd.Spec.Versions {
		if ver.Name == v && ver.Schema != nil {
			return ver.Schema.OpenAPIV3Schema
		}
	}
	return nil
}
