package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/render"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// What a step, a rollback or a pass says when it ends short of what was
// asked, or goes ahead on something other than its own proof: the command
// line decides which applies, and says it in these words.

// notBridged is a bridge step refused because objects failed the round trip.
func notBridged(version string, losses int) error {
	return fmt.Errorf("%s cannot be bridged: %d object checks lose data or fail the round trip (above)", version, losses)
}

// reusedCheck is the bridge step taking the round-trip check verify recorded.
func reusedCheck(crd string, r *lifecycle.Verification) string {
	return fmt.Sprintf("%s: the round-trip check verify recorded %s ago (%s) is taken: neither the CRD nor any object changed since",
		crd, time.Since(r.At).Round(time.Second), stages.Objects(r.Objects))
}

// switchedBack is a deprecated step undone because re-storing would lose
// data: the storage version is the old one again.
func switchedBack(p *lifecycle.Plan) error {
	old, nw := p.Pair.Old, p.Pair.New
	return fmt.Errorf("%s was not deprecated: re-storing the objects stored at %s at %s would lose data (above); %s is the storage version again and no object was re-stored, but a write at %s between the switch and the switch back went through %s, so it was stored without those fields (kubectl crdversion migrate %s re-stores such objects at %s after checking them)",
		old, old, nw, old, old, nw, p.CRD, old)
}

// rollbackUndone is a step back undone because storing at the old version
// would lose data: the new version is storage again. A refusal with its ways
// on (exit 3), never the same step back: it is recorded on the CRD, so
// upgrade's plan names them too.
func rollbackUndone(p *lifecycle.Plan, switchStorage bool) error {
	old, nw := p.Pair.Old, p.Pair.New
	accept := lifecycle.Step{Op: lifecycle.OpRollback, CRD: p.CRD, Version: nw, SwitchStorage: switchStorage, AcceptLoss: true}
	return attention(fmt.Errorf("%s did not become the storage version again: storing at %s would lose the fields named above; %s is the storage version again and its bridge record is dropped, but a write between the switch and the switch back was stored at %s without those fields. "+
		"Ways on: keep the fields (add them to %s's schema in the CRD's manifest, apply it, and run this again); accept the loss by name (%s); or stay on the release that stores at %s",
		old, old, nw, old, old, render.Command(accept), nw))
}

// lossAccepted says that a switch back stands despite the loss the user
// accepted by name: what the objects named above lose, and when.
func lossAccepted(p *lifecycle.Plan, check *results.SwitchCheck) string {
	objects, fields := map[string]bool{}, []string{}
	for _, pr := range check.Proofs {
		for _, l := range pr.Losses {
			objects[l.Namespace+"/"+l.Name] = true
			for _, d := range l.Diffs {
				if !slices.Contains(fields, d.Path) {
					fields = append(fields, d.Path)
				}
			}
		}
	}
	slices.Sort(fields)
	return fmt.Sprintf("warning: %s: %s is the storage version despite the loss accepted by name: %s lose %s (above) at their next write, or when kubectl crdversion migrate %s --accept-loss re-stores them",
		p.CRD, p.Pair.Old, stages.Objects(int64(len(objects))), strings.Join(fields, ", "), p.CRD)
}

// managedFieldsLeft is the removed step's cleanup stopping short.
func managedFieldsLeft(crd, stopped string) error {
	return fmt.Errorf("managedFields of %s not cleaned everywhere (%s); run: kubectl crdversion migrate %s --clean-managed-fields", crd, stopped, crd)
}

// pruneOnYourWord warns of a prune without proof.
func pruneOnYourWord(crd, storage string) string {
	return fmt.Sprintf("warning: pruning %s on your word, without proof: any object still stored at a version other than %s becomes unreadable once that version is removed", crd, storage)
}

// replanned warns that a step was planned again on another writer's change.
func replanned(crd string, replans int) string {
	return fmt.Sprintf("warning: %s changed while this step was planned; re-planned %d time(s) against the change", crd, replans)
}

// skipTheGrace says when the switch grace's wait is safe to skip.
const skipTheGrace = "  where no write can still be in flight (nothing else writes these objects, or the switch is older than twice the API server's request timeout), --switch-grace=0 skips this wait"
