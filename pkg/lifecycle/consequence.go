package lifecycle

import "fmt"

// Consequence sets each finding's severity by what the upgrade does to
// the people who apply it, as check reports by default: an error is what
// will fail (the API server refuses the apply, a live object is refused
// now); a warning what may fail later or elsewhere (a ratcheted object, a
// version dropped, a release rule broken, a schema tightened where the
// objects could not be seen); a note what fails nothing (a schema
// tightened that every live object passes). validated counts, per CRD and
// version ("crd/version"), the live objects checked against the new
// schema; nil without a cluster. With policy, the release rules of a CRD
// author (N → N+1, no breaking schema change) stay errors, as the rules
// themselves say.
func Consequence(found []Finding, validated map[string]int64, policy bool) []Finding {
	failing := map[string]bool{}
	for _, f := range found {
		if f.Kind == FindingObjects && f.Severity != SeverityNote {
			failing[f.CRD+"/"+f.Version] = true
		}
	}
	out := make([]Finding, len(found))
	for i, f := range found {
		out[i] = f
		if policy || f.Severity != SeverityError || (f.Kind != FindingLifecycle && f.Kind != FindingSchema) {
			continue
		}
		out[i].Severity = SeverityWarning
		n, seen := validated[f.CRD+"/"+f.Version]
		if f.Kind == FindingSchema && f.Rule != "storageSwitchMayLoseData" && seen && !failing[f.CRD+"/"+f.Version] {
			out[i].Severity = SeverityNote
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
