package stages

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// diffVersions lists what differs between two revisions of a CRD, by version in priority order.
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
			out = append(out, Change{Version: n, Field: FieldVersion, From: "", To: "added"})
		case a == nil:
			out = append(out, Change{Version: n, Field: FieldVersion, From: "present", To: ""})
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
					out = append(out, Change{Version: n, Field: f.name, From: f.b, To: f.a})
				}
			}
		}
		key := VerifiedAnnotationPrefix + n
		if bv, av := before.Annotations[key], after.Annotations[key]; bv != av {
			out = append(out, Change{Version: n, Field: FieldAnnotation, From: present(bv), To: present(av)})
		}
	}
	if b, a := ConversionSummary(before.Spec.Conversion), ConversionSummary(after.Spec.Conversion); b != a {
		out = append(out, Change{Version: "", Field: FieldConversion, From: b, To: a})
	}
	return out
}

// ConversionSummary says in one line how versions are converted: None, or Webhook with where it is
// called and its caBundle's hash (cert-manager's cainjector changes it).
func ConversionSummary(c *apiextensionsv1.CustomResourceConversion) string {
	if c == nil || c.Strategy == "" || c.Strategy == apiextensionsv1.NoneConverter {
		return string(apiextensionsv1.NoneConverter)
	}
	s := string(c.Strategy)
	if c.Webhook == nil || c.Webhook.ClientConfig == nil {
		return s
	}
	cc := c.Webhook.ClientConfig
	switch {
	case cc.Service != nil:
		s += fmt.Sprintf(" service %s/%s", cc.Service.Namespace, cc.Service.Name)
		if cc.Service.Port != nil {
			s += fmt.Sprintf(":%d", *cc.Service.Port)
		}
		if cc.Service.Path != nil {
			s += *cc.Service.Path
		}
	case cc.URL != nil:
		s += " " + *cc.URL
	}
	if len(cc.CABundle) == 0 {
		return s + ", no caBundle"
	}
	sum := sha256.Sum256(cc.CABundle)
	return s + ", caBundle sha256:" + hex.EncodeToString(sum[:4])
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
