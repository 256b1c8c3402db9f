package lifecycle

import (
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Field names what a Change changes: a flag of a version, the version
// itself, or its verification record.
type Field string

const (
	// FieldVersion with From "" or To "" is a version added or removed.
	FieldVersion            Field = "version"
	FieldServed             Field = "served"
	FieldStorage            Field = "storage"
	FieldDeprecated         Field = "deprecated"
	FieldDeprecationWarning Field = "deprecationWarning"
	// FieldAnnotation is a verification record set or cleared.
	FieldAnnotation Field = "annotation"
)

// Change is one field of one version that a plan changes.
type Change struct {
	Version string `json:"version"`
	Field   Field  `json:"field"`
	From    string `json:"from"`
	To      string `json:"to"`
}

// diffVersions lists what differs between two revisions of a CRD, version
// by version in priority order, so a plan shows exactly what it will write.
func diffVersions(before, after *apiextensionsv1.CustomResourceDefinition) []Change {
	names := map[string]bool{}
	for _, c := range []*apiextensionsv1.CustomResourceDefinition{before, after} {
		for _, v := range c.Spec.Versions {
			names[v.Name] = true
		}
	}
	var ordered []string
	for n := range names {
		ordered = append(ordered, n)
	}
	SortByPriority(ordered)

	var out []Change
	for _, n := range ordered {
		b, a := SpecVersion(before, n), SpecVersion(after, n)
		switch {
		case b == nil:
			out = append(out, Change{n, FieldVersion, "", "added"})
		case a == nil:
			out = append(out, Change{n, FieldVersion, "present", ""})
		default:
			for _, f := range []struct {
				name Field
				b, a string
			}{
				{FieldServed, strconv.FormatBool(b.Served), strconv.FormatBool(a.Served)},
				{FieldStorage, strconv.FormatBool(b.Storage), strconv.FormatBool(a.Storage)},
				{FieldDeprecated, strconv.FormatBool(b.Deprecated), strconv.FormatBool(a.Deprecated)},
				{FieldDeprecationWarning, deref(b.DeprecationWarning), deref(a.DeprecationWarning)},
			} {
				if f.b != f.a {
					out = append(out, Change{n, f.name, f.b, f.a})
				}
			}
		}
		key := VerifiedAnnotationPrefix + n
		if bv, av := before.Annotations[key], after.Annotations[key]; bv != av {
			out = append(out, Change{n, FieldAnnotation, present(bv), present(av)})
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func present(s string) string {
	if s == "" {
		return ""
	}
	return "verified"
}
