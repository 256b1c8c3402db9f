package lifecycle

import (
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Change is one field of one version that a plan changes. Field "version"
// with From "" or To "" is a version added or removed; field "annotation"
// is a verification record set or cleared.
type Change struct {
	Version string `json:"version"`
	Field   string `json:"field"`
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
		b, a := specVersion(before, n), specVersion(after, n)
		switch {
		case b == nil:
			out = append(out, Change{n, "version", "", "added"})
		case a == nil:
			out = append(out, Change{n, "version", "present", ""})
		default:
			for _, f := range []struct {
				name string
				b, a string
			}{
				{"served", strconv.FormatBool(b.Served), strconv.FormatBool(a.Served)},
				{"storage", strconv.FormatBool(b.Storage), strconv.FormatBool(a.Storage)},
				{"deprecated", strconv.FormatBool(b.Deprecated), strconv.FormatBool(a.Deprecated)},
				{"deprecationWarning", deref(b.DeprecationWarning), deref(a.DeprecationWarning)},
			} {
				if f.b != f.a {
					out = append(out, Change{n, f.name, f.b, f.a})
				}
			}
		}
		key := VerifiedAnnotationPrefix + n
		if bv, av := before.Annotations[key], after.Annotations[key]; bv != av {
			out = append(out, Change{n, "annotation", present(bv), present(av)})
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
