package main

import (
	"fmt"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
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
		crd, time.Since(r.At).Round(time.Second), lifecycle.Objects(r.Objects))
}

// switchedBack is a deprecated step undone because re-storing would lose
// data: the storage version is the old one again.
func switchedBack(p *lifecycle.Plan) error {
	old, nw := p.Pair.Old, p.Pair.New
	return fmt.Errorf("%s was not deprecated: re-storing the objects stored at %s at %s would lose data (above); %s is the storage version again and no object was re-stored, but a write at %s between the switch and the switch back went through %s, so it was stored without those fields (kubectl crdversion migrate %s re-stores such objects at %s after checking them)",
		old, old, nw, old, old, nw, p.CRD, old)
}

// rollbackUndone is a step back undone because storing at the old version
// would lose data: the new version is storage again.
func rollbackUndone(p *lifecycle.Plan) error {
	old, nw := p.Pair.Old, p.Pair.New
	return fmt.Errorf("%s did not become the storage version again: objects written at %s would lose data stored at %s (above); %s is the storage version again and its bridge record is dropped, but a write between the switch and the switch back was stored at %s without those fields",
		old, nw, old, nw, old)
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
