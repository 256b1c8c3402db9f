package check

import (
	"fmt"
	"strings"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// Consequence sets each finding's severity by what the upgrade does to those who apply it: an
// error will fail (the apply refused, a live object refused now); a warning may fail later or
// elsewhere (a ratcheted object, a dropped version, a broken release rule, a schema tightened
// where objects were unseen); a note fails nothing (a tightening every live object passes).
// validated counts the live objects checked per "crd/version" (nil without a cluster). With
// policy, a CRD author's release rules (N → N+1, no breaking schema change) stay errors.
func Consequence(found []results.Finding, validated map[string]int64, policy bool) []results.Finding {
	// Where live objects fail, per CRD and version: a schema change elsewhere is not why.
	failing := map[string][]string{}
	for _, f := range found {
		if f.Kind == results.FindingObjects && f.Severity != lifecycle.SeverityNote {
			k := f.CRD + "/" + f.Version
			for p := range strings.SplitSeq(f.Path, ", ") {
				failing[k] = append(failing[k], SchemaPath(p))
			}
		}
	}
	out := make([]results.Finding, len(found))
	for i, f := range found {
		out[i] = f
		if policy || f.Severity != lifecycle.SeverityError || (f.Kind != results.FindingLifecycle && f.Kind != results.FindingSchema) {
			continue
		}
		out[i].Severity = lifecycle.SeverityWarning
		n, seen := validated[f.CRD+"/"+f.Version]
		if f.Kind == results.FindingSchema && f.Rule != "storageSwitchMayLoseData" && seen && !related(SchemaPath(f.Path), failing[f.CRD+"/"+f.Version]) {
			out[i].Severity = lifecycle.SeverityNote
			out[i].Message = f.Message + "; " + allObjects(n)
		}
	}
	return out
}

func allObjects(n int64) string {
	switch n {
	case 0:
		return "there is no live object"
	case 1:
		return "the one live object passes it"
	}
	return fmt.Sprintf("all %d live objects pass it", n)
}

// SchemaPath writes an object's field path as a schema path: an index or
// a map key becomes [*] (the schema's ".*" of a map too); the root is "".
func SchemaPath(p string) string {
	if p == "(root)" || p == "<nil>" {
		return ""
	}
	var b strings.Builder
	for len(p) > 0 {
		i := strings.IndexByte(p, '[')
		if i < 0 {
			b.WriteString(p)
			break
		}
		b.WriteString(p[:i])
		end := strings.IndexByte(p[i:], ']')
		if end < 0 {
			b.WriteString(p[i:])
			break
		}
		b.WriteString("[*]")
		p = p[i+end+1:]
	}
	return strings.ReplaceAll(b.String(), ".*", "[*]")
}

// related says whether a schema change at path can be what an object failing at one of paths
// fails on: the same field, one inside the other, or the whole object.
func related(path string, paths []string) bool {
	within := func(inner, outer string) bool {
		return outer == "" || inner == outer || strings.HasPrefix(inner, outer+".") || strings.HasPrefix(inner, outer+"[")
	}
	for _, p := range paths {
		if within(path, p) || within(p, path) {
			return true
		}
	}
	return false
}
