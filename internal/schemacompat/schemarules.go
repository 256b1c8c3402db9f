package schemacompat

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// SchemaChange is one difference between two schemas of a version that
// breaks its clients or its stored objects, or that they should know of.
type SchemaChange struct {
	Path     string `json:"path"`     // JSON path, as schemaproof.go's display() renders it, e.g. spec.replicas, spec.items[*].name, (root)
	Rule     string `json:"rule"`     // rule name (see below)
	Breaking bool   `json:"breaking"` // true: clients or stored objects break; false: worth knowing
	Message  string `json:"message"`  // one sentence, names both values: e.g. "type changed from string to integer"
}

// SchemaChanges compares version old's schema with version new's schema (both
// *apiextensionsv1.JSONSchemaProps, either may be nil = no schema) and lists every
// change, walking properties in sorted order, deterministic.
//
// The rules follow kubernetes-sigs/crdify's: a change is breaking when an
// object or a request valid under old may be rejected, pruned or read
// differently under new. Loosening changes are left out, except a default
// changed and a validation rule removed, which alter what gets stored without
// rejecting anything. The result is ordered by path, then rule, then message.
func SchemaChanges(old, new *apiextensionsv1.JSONSchemaProps) []SchemaChange {
	switch {
	case old == nil:
		// Without a schema old made no promise about an object's shape, so
		// there is nothing for new to break.
		return nil
	case new == nil:
		return []SchemaChange{{Path: display(""), Rule: "schemaRemoved", Breaking: true, Message: "schema changed from present to absent"}}
	}
	var w changeWalker
	// The API server owns apiVersion, kind and metadata at a resource root;
	// what the schema says of them is not the CRD author's contract.
	w.node("", old, new, true)
	slices.SortStableFunc(w.out, func(a, b SchemaChange) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Rule, b.Rule), strings.Compare(a.Message, b.Message))
	})
	return w.out
}

// finding is what a rule says of one node; field, when set, moves it to
// that property of the node, so a user is pointed at the field itself.
type finding struct {
	rule     string
	breaking bool
	message  string
	field    string
}

func findingOf(rule string, breaking bool, format string, args ...any) []finding {
	return []finding{{rule: rule, breaking: breaking, message: fmt.Sprintf(format, args...)}}
}

// nodeRules run on every pair of nodes present in both schemas whose type
// still agrees.
var nodeRules = []func(o, n *apiextensionsv1.JSONSchemaProps) []finding{
	enumValueRemoved,
	enumAdded,
	requiredAdded,
	defaultChanged,
	maximumTightened,
	minimumTightened,
	maxLengthTightened,
	minLengthTightened,
	maxItemsTightened,
	minItemsTightened,
	maxPropertiesTightened,
	minPropertiesTightened,
	patternChanged,
	formatChanged,
	validationRuleAdded,
	validationRuleRemoved,
	nullableRemoved,
	preserveUnknownFieldsRemoved,
	listTypeChanged,
	mapTypeChanged,
}

type changeWalker struct{ out []SchemaChange }

func (w *changeWalker) add(path string, fs []finding) {
	for _, f := range fs {
		p := path
		if f.field != "" {
			p = child(path, f.field)
		}
		w.out = append(w.out, SchemaChange{Path: display(p), Rule: f.rule, Breaking: f.breaking, Message: f.message})
	}
}

func (w *changeWalker) node(path string, o, n *apiextensionsv1.JSONSchemaProps, resourceRoot bool) {
	if fs := typeChanged(o, n); fs != nil {
		// Every object here is invalid under the new type already; what
		// the rules below would say compares constraints of different kinds
		// of value and only buries the one change that matters.
		w.add(path, fs)
		return
	}
	for _, rule := range nodeRules {
		w.add(path, rule(o, n))
	}

	for _, k := range slices.Sorted(maps.Keys(o.Properties)) {
		if resourceRoot && metaFields[k] {
			continue
		}
		ok := o.Properties[k]
		kp := child(path, k)
		if nk, listed := n.Properties[k]; listed {
			w.node(kp, &ok, &nk, false)
			continue
		}
		switch na := n.AdditionalProperties; {
		case isTrue(n.XPreserveUnknownFields):
			// new keeps the field, unchecked, so no object loses it.
		case na != nil && na.Schema != nil:
			// The field lives on as a map key; what matters is whether its
			// values still pass the map's value schema.
			w.node(kp, &ok, na.Schema, false)
		case na != nil && na.Allows:
			// Any value is still accepted under any key.
		default:
			w.add(kp, fieldRemoved(&ok))
		}
	}

	if isTrue(o.XPreserveUnknownFields) {
		for _, k := range slices.Sorted(maps.Keys(n.Properties)) {
			if _, had := o.Properties[k]; had || (resourceRoot && metaFields[k]) {
				continue
			}
			nk := n.Properties[k]
			w.add(child(path, k), fieldGetsSchema(&nk))
		}
	}

	if o.Items != nil && o.Items.Schema != nil && n.Items != nil && n.Items.Schema != nil {
		w.node(path+"[*]", o.Items.Schema, n.Items.Schema, false)
	}

	oa, na := o.AdditionalProperties, n.AdditionalProperties
	switch {
	case !allowsMore(oa):
		// old held no map entries, so there are none to lose.
	case oa.Schema != nil && na != nil && na.Schema != nil:
		w.node(path+".*", oa.Schema, na.Schema, false)
	case !allowsMore(na) && !isTrue(n.XPreserveUnknownFields):
		// Every map entry old accepted is now an unknown field, pruned on
		// the next write: the same loss as a removed field.
		w.add(path+".*", findingOf("fieldRemoved", true, "additionalProperties changed from allowed to absent"))
	}
}

func allowsMore(a *apiextensionsv1.JSONSchemaPropsOrBool) bool {
	return a != nil && (a.Allows || a.Schema != nil)
}

// fieldGetsSchema is a field old kept unchecked (under
// x-kubernetes-preserve-unknown-fields) that new gives a schema: what an
// object holds there that the schema does not list is pruned, and a value
// it does not allow is refused. A schema that keeps anything under it
// (preserving unknown fields, with nothing listed, of any type) loses
// nothing.
func fieldGetsSchema(n *apiextensionsv1.JSONSchemaProps) []finding {
	if isTrue(n.XPreserveUnknownFields) && n.Type == "" && len(n.Properties) == 0 && n.Items == nil && n.AdditionalProperties == nil {
		return nil
	}
	return findingOf("fieldGetsSchema", true, "field kept unchecked by x-kubernetes-preserve-unknown-fields now has a schema (%s): what objects hold here that it does not list is dropped, a value of another form refused", typeText(n))
}

func fieldRemoved(o *apiextensionsv1.JSONSchemaProps) []finding {
	return findingOf("fieldRemoved", true, "field removed (was %s, now absent)", typeText(o))
}

func typeChanged(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	if o.Type == n.Type && o.XIntOrString == n.XIntOrString {
		return nil
	}
	return findingOf("typeChanged", true, "type changed from %s to %s", typeText(o), typeText(n))
}

// typeText folds x-kubernetes-int-or-string into the type, as it is one to
// a client: the values the field may hold.
func typeText(s *apiextensionsv1.JSONSchemaProps) string {
	switch {
	case !s.XIntOrString:
		return typeName(s.Type)
	case s.Type == "":
		return "int-or-string"
	}
	return s.Type + " (int-or-string)"
}

func enumValueRemoved(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	if len(o.Enum) == 0 || len(n.Enum) == 0 {
		return nil
	}
	kept := map[string]bool{}
	for _, v := range n.Enum {
		kept[canonicalJSON(v.Raw)] = true
	}
	var gone []string
	for _, v := range o.Enum {
		if c := canonicalJSON(v.Raw); !kept[c] {
			gone = append(gone, c)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	return findingOf("enumValueRemoved", true, "enum changed from %s to %s, dropping %s", enumText(o.Enum), enumText(n.Enum), strings.Join(gone, ", "))
}

func enumAdded(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	if len(o.Enum) > 0 || len(n.Enum) == 0 {
		return nil
	}
	return findingOf("enumAdded", true, "enum changed from none to %s", enumText(n.Enum))
}

func enumText(enum []apiextensionsv1.JSON) string {
	vs := make([]string, len(enum))
	for i, v := range enum {
		vs[i] = canonicalJSON(v.Raw)
	}
	return "[" + strings.Join(vs, ", ") + "]"
}

func requiredAdded(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	var fs []finding
	for _, k := range n.Required {
		if slices.Contains(o.Required, k) || slices.ContainsFunc(fs, func(f finding) bool { return f.field == k }) {
			continue
		}
		fs = append(fs, finding{rule: "requiredAdded", breaking: true, message: "field changed from optional to required", field: k})
	}
	return fs
}

func defaultChanged(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	od, nd := defaultText(o.Default), defaultText(n.Default)
	if od == nd {
		return nil
	}
	return findingOf("defaultChanged", false, "default changed from %s to %s", od, nd)
}

func defaultText(d *apiextensionsv1.JSON) string {
	if d == nil || len(d.Raw) == 0 {
		return "none"
	}
	return canonicalJSON(d.Raw)
}

// canonicalJSON renders raw compactly with object keys sorted, so values
// that differ only in spelling (a manifest's YAML against the server's JSON)
// compare equal. Numbers keep their literal: as float64 large integers would
// collide.
func canonicalJSON(raw []byte) string {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return string(bytes.TrimSpace(raw))
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	// Messages are read by people, not embedded in HTML.
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return string(bytes.TrimSpace(raw))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func maximumTightened(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	if n.Maximum == nil {
		return nil
	}
	if o.Maximum != nil && (*n.Maximum > *o.Maximum || (*n.Maximum == *o.Maximum && (o.ExclusiveMaximum || !n.ExclusiveMaximum))) {
		return nil
	}
	return findingOf("maximumTightened", true, "maximum changed from %s to %s", boundText(o.Maximum, o.ExclusiveMaximum), boundText(n.Maximum, n.ExclusiveMaximum))
}

func minimumTightened(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	if n.Minimum == nil {
		return nil
	}
	if o.Minimum != nil && (*n.Minimum < *o.Minimum || (*n.Minimum == *o.Minimum && (o.ExclusiveMinimum || !n.ExclusiveMinimum))) {
		return nil
	}
	return findingOf("minimumTightened", true, "minimum changed from %s to %s", boundText(o.Minimum, o.ExclusiveMinimum), boundText(n.Minimum, n.ExclusiveMinimum))
}

func boundText(v *float64, exclusive bool) string {
	if v == nil {
		return "none"
	}
	s := strconv.FormatFloat(*v, 'f', -1, 64)
	if exclusive {
		s += " (exclusive)"
	}
	return s
}

func maxLengthTightened(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	return upperLimit("maxLengthTightened", "maxLength", o.MaxLength, n.MaxLength)
}

func minLengthTightened(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	return lowerLimit("minLengthTightened", "minLength", o.MinLength, n.MinLength)
}

func maxItemsTightened(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	return upperLimit("maxItemsTightened", "maxItems", o.MaxItems, n.MaxItems)
}

func minItemsTightened(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	return lowerLimit("minItemsTightened", "minItems", o.MinItems, n.MinItems)
}

func maxPropertiesTightened(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	return upperLimit("maxPropertiesTightened", "maxProperties", o.MaxProperties, n.MaxProperties)
}

func minPropertiesTightened(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	return lowerLimit("minPropertiesTightened", "minProperties", o.MinProperties, n.MinProperties)
}

func upperLimit(rule, keyword string, o, n *int64) []finding {
	if n == nil || (o != nil && *n >= *o) {
		return nil
	}
	return findingOf(rule, true, "%s changed from %s to %d", keyword, limitText(o), *n)
}

func lowerLimit(rule, keyword string, o, n *int64) []finding {
	// An unset lower limit is 0: a minLength of 0 added rejects nothing.
	var was int64
	if o != nil {
		was = *o
	}
	if n == nil || *n <= was {
		return nil
	}
	return findingOf(rule, true, "%s changed from %s to %d", keyword, limitText(o), *n)
}

func limitText(v *int64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatInt(*v, 10)
}

func patternChanged(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	// Any other pattern may reject a value the old one took; telling a
	// looser regular expression from a tighter one is beyond a schema diff.
	if n.Pattern == "" || n.Pattern == o.Pattern {
		return nil
	}
	return findingOf("patternChanged", true, "pattern changed from %s to %q", quotedOrNone(o.Pattern), n.Pattern)
}

func formatChanged(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	if n.Format == "" || n.Format == o.Format {
		return nil
	}
	return findingOf("formatChanged", true, "format changed from %s to %q", quotedOrNone(o.Format), n.Format)
}

func quotedOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return strconv.Quote(s)
}

func validationRuleAdded(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	return ruleDiff("validationRuleAdded", true, "added", n.XValidations, o.XValidations)
}

func validationRuleRemoved(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	// Nothing is rejected for it, but whatever the rule guarded may now be
	// stored, and clients that counted on it should hear of that.
	return ruleDiff("validationRuleRemoved", false, "removed", o.XValidations, n.XValidations)
}

// ruleDiff reports each rule of in that is not in notIn. Rules are told
// apart by their CEL expression alone: a new message or reason rejects
// nothing more.
func ruleDiff(rule string, breaking bool, verb string, in, notIn apiextensionsv1.ValidationRules) []finding {
	var fs []finding
	seen := map[string]bool{}
	for _, r := range notIn {
		seen[r.Rule] = true
	}
	for _, r := range in {
		if seen[r.Rule] {
			continue
		}
		seen[r.Rule] = true
		fs = append(fs, findingOf(rule, breaking, "x-kubernetes-validations rule %q %s", r.Rule, verb)...)
	}
	return fs
}

func nullableRemoved(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	if !o.Nullable || n.Nullable {
		return nil
	}
	return findingOf("nullableRemoved", true, "nullable changed from true to false")
}

func preserveUnknownFieldsRemoved(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	if !isTrue(o.XPreserveUnknownFields) || isTrue(n.XPreserveUnknownFields) {
		return nil
	}
	return findingOf("preserveUnknownFieldsRemoved", true, "x-kubernetes-preserve-unknown-fields changed from true to false")
}

func listTypeChanged(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	ot, nt := listType(o), listType(n)
	// The keys together name an item; their order in the list does not.
	if ot == nt && slices.Equal(slices.Sorted(slices.Values(o.XListMapKeys)), slices.Sorted(slices.Values(n.XListMapKeys))) {
		return nil
	}
	return findingOf("listTypeChanged", true, "x-kubernetes-list-type changed from %s to %s", listText(ot, o.XListMapKeys), listText(nt, n.XListMapKeys))
}

// listType treats unset as atomic, which is what server-side apply does
// with it, so spelling the default out is no change.
func listType(s *apiextensionsv1.JSONSchemaProps) string {
	if s.XListType == nil || *s.XListType == "" {
		return "atomic"
	}
	return *s.XListType
}

func listText(t string, keys []string) string {
	if len(keys) == 0 {
		return t
	}
	return t + " [" + strings.Join(keys, ", ") + "]"
}

func mapTypeChanged(o, n *apiextensionsv1.JSONSchemaProps) []finding {
	om, nm := mapType(o), mapType(n)
	if om == nm {
		return nil
	}
	return findingOf("mapTypeChanged", true, "x-kubernetes-map-type changed from %s to %s", om, nm)
}

// mapType treats unset as granular, server-side apply's default for maps
// and structs.
func mapType(s *apiextensionsv1.JSONSchemaProps) string {
	if s.XMapType == nil || *s.XMapType == "" {
		return "granular"
	}
	return *s.XMapType
}
