package crdmigrator

import (
	"fmt"
	"strings"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// counts are a migration's objects over both its passes.
type counts struct {
	restored, refused, failed int64
}

func count(res *results.Result) counts {
	c := counts{restored: res.Rewritten, refused: res.Lost, failed: res.Failed + res.Changed}
	if s := res.Settle; s != nil {
		c.restored += s.Rewritten
		c.refused += s.Lost
		c.failed += s.Failed + s.Changed
	}
	return c
}

// result is how a migration ended, as the runs metric names it.
type result string

const (
	resultDone       result = "done"
	resultRefused    result = "refused"
	resultIncomplete result = "incomplete"
)

type summary struct {
	result result
	// what says it in words, for the log and the Event.
	what string
}

// summarize reads a migration's result. A refusal (an object that
// old→new→old would change, left as it was) is settled until the CRD
// changes: the same check refuses the same object. Failures and stops are
// tried again: an API error or a conversion webhook outage passes.
func summarize(res *results.Result, c counts, prune bool) summary {
	var b strings.Builder
	fmt.Fprintf(&b, "%d objects re-stored at %s, %d already there", c.restored, res.Storage, res.Unchanged)
	if c.refused > 0 {
		fmt.Fprintf(&b, "; %d refused: re-storing would lose data (%s), left as they are", c.refused, firstLoss(res.Proofs))
	}
	if c.failed > 0 {
		fmt.Fprintf(&b, "; %d failed%s", c.failed, firstFailure(append(res.Failures, settleFailures(res)...)))
	}
	stopped := res.Stopped
	if stopped == "" && res.Settle != nil {
		stopped = res.Settle.Stopped
	}
	if stopped != "" {
		fmt.Fprintf(&b, "; stopped: %s", stopped)
	}
	switch {
	case res.Pruned:
		fmt.Fprintf(&b, "; storedVersions [%s] → [%s]", strings.Join(res.StoredVersions, " "), strings.Join(res.StoredVersionsAfter, " "))
	case prune && res.PruneReason != results.PruneNothingToPrune:
		fmt.Fprintf(&b, "; storedVersions [%s] not pruned: %s", strings.Join(res.StoredVersionsAfter, " "), res.PruneSkipped)
	}
	switch {
	case c.failed > 0 || stopped != "":
		return summary{resultIncomplete, b.String() + "; trying again after a backoff"}
	case c.refused > 0:
		return summary{resultRefused, b.String() + "; tried again when the CRD changes"}
	case res.NeedsAttention(prune):
		return summary{resultIncomplete, b.String() + "; trying again after a backoff"}
	}
	return summary{resultDone, b.String()}
}

func settleFailures(res *results.Result) []results.Failure {
	if res.Settle == nil {
		return nil
	}
	return res.Settle.Failures
}

func firstFailure(fs []results.Failure) string {
	if len(fs) == 0 {
		return ""
	}
	f := fs[0]
	return fmt.Sprintf(" (first: %s, %d %s: %s)", objectName(f.Namespace, f.Name), f.Code, f.Reason, f.Message)
}

func firstLoss(proofs []results.Proof) string {
	for _, p := range proofs {
		for _, l := range p.Losses {
			switch {
			case l.Error != "":
				return fmt.Sprintf("first: %s at %s: %s", objectName(l.Namespace, l.Name), l.Version, l.Error)
			case len(l.Diffs) > 0:
				return fmt.Sprintf("first: %s at %s loses %s", objectName(l.Namespace, l.Name), l.Version, l.Diffs[0].Path)
			}
		}
	}
	return "the proofs name no object"
}

func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
