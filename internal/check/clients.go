package check

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// requestsFinding says what the metric shows of a version the upgrade stops serving: requests
// while deprecated (a warning: those clients get 404), or that it could not be read (a note: a
// read-only client is then unseen). False when it has nothing to say (no request, or never
// deprecated). Where own accounts for every request, the finding is a note saying so.
func requestsFinding(d *usage.DeprecatedAPIs, crd *apiextensionsv1.CustomResourceDefinition, version, replacement string, own map[string]usage.OwnUse) (results.Finding, bool) {
	f := results.Finding{Kind: results.FindingClients, CRD: crd.Name, Version: version}
	if v := stages.SpecVersion(crd, version); v == nil || !v.Deprecated {
		return f, false
	}
	if d.Access != usage.MetricsRead {
		f.Severity, f.Rule = lifecycle.SeverityNote, "requestsNotVisible"
		f.Message = fmt.Sprintf("requests to %s cannot be seen: %s; a client that only reads %s is not named here", version, d.Unreadable(), version)
		return f, true
	}
	r, ok := d.ForCRD(crd)[version]
	if !ok {
		return f, false
	}
	what := make([]string, len(r.Subresources))
	for i, s := range r.Subresources {
		what[i] = cmp.Or(s, "the resource")
	}
	since := "since the API server that answered started"
	if !d.StartedAt.IsZero() {
		since += " (" + d.StartedAt.Format(time.RFC3339) + ")"
	}
	mine, recorded := own[version]
	if recorded && mine.Since == 0 {
		f.Severity, f.Rule = lifecycle.SeverityNote, "requestedOnlyByThisPlugin"
		f.Message = fmt.Sprintf("the API server's deprecated-API metric counts requests to %s (%s) %s, and every one was this plugin's own (%s, %d requests, recorded on this machine): no other client was seen", version, strings.Join(what, ", "), since, strings.Join(mine.Commands, ", "), mine.Requests)
		return f, true
	}
	f.Severity, f.Rule = lifecycle.SeverityWarning, "requestedOnVersion"
	f.Message = fmt.Sprintf("the API server's deprecated-API metric counts requests to %s (%s) %s; this upgrade stops serving it, so those clients get 404", version, strings.Join(what, ", "), since)
	if recorded {
		f.Message += fmt.Sprintf(" (%d since this plugin's own %s)", mine.Since, strings.Join(mine.Commands, ", "))
	}
	f.Fix = []lifecycle.Advice{{Text: fmt.Sprintf("name these clients from the API server's audit log (the metric names none: kubectl crdversion usage %s --audit-log PATH) and move them to %s before applying", crd.Name, replacement)}}
	return f, true
}

// managersFinding says which clients still write a version the upgrade unserves or removes.
func managersFinding(crd, version, replacement string, managers map[string]int64) results.Finding {
	names := slices.SortedFunc(maps.Keys(managers), func(a, b string) int {
		if managers[a] != managers[b] {
			return int(managers[b] - managers[a])
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s (%s)", n, stages.Objects(managers[n]))
	}
	return results.Finding{Severity: lifecycle.SeverityWarning, Kind: results.FindingClients, CRD: crd, Version: version, Rule: "clientsOnVersion",
		Message: fmt.Sprintf("field managers whose last write used %s, which this upgrade stops serving: %s", version, strings.Join(parts, ", ")),
		Fix: []lifecycle.Advice{{Text: fmt.Sprintf("move these clients to %s before applying (a manager's entry shows only its last write)", replacement)},
			{Text: fmt.Sprintf("the entries they leave at %s are moved before the apply, as the plan toward the release does (kubectl crdversion upgrade -f NEW_MANIFEST)", version)}}}
}
