package stages

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// UpgradeFacts is what the cluster shows beyond the CRD: Entries are the versions the release
// removes that objects' managedFields entries still name; Apply is how the owner applies it.
type UpgradeFacts struct {
	Entries []string
	Apply   Advice
}

// PlanUpgrade plans the way from live (nil: not on the cluster) to next, the release's CRD. The
// order leaves no window in which a client fails: what the apply would be refused for (a stored
// version it removes) and what breaks server-side apply once it lands (managedFields entries at
// a removed version) are done before it; the re-store of a storage switch the apply makes, after.
func PlanUpgrade(live, next *apiextensionsv1.CustomResourceDefinition, f UpgradeFacts) Upgrade {
	var w *Window
	if live != nil {
		w = OpenWindow(live)
	}
	if w == nil {
		return planUpgrade(live, next, f)
	}
	// A stopped run's step is closed before anything else; the rest is planned from the CRD as
	// its undo leaves it (a switch's check may keep it instead: then the next plan says so).
	closed := live
	if p, err := PlanUndoWindow(live, w); err == nil {
		closed = p.After
	}
	u := planUpgrade(closed, next, f)
	u.Steps = append([]Waypoint{{Phase: PhaseBefore, Advice: WindowAdvice(w)}}, u.Steps...)
	u.Done = false
	return u
}

func planUpgrade(live, next *apiextensionsv1.CustomResourceDefinition, f UpgradeFacts) Upgrade {
	u := Upgrade{CRD: next.Name}
	apply := Waypoint{Phase: PhaseApply, Advice: f.Apply}
	if live == nil {
		u.Steps = []Waypoint{apply}
		return u
	}
	if Applied(live, next) {
		u.Steps = settle(live, f)
		u.Done = len(u.Steps) == 0
		return u
	}
	u.Steps = append(before(live, next, f), apply)
	if s := StorageVersion(next); s != StorageVersion(live) && SpecVersion(live, s) != nil && SpecVersion(next, StorageVersion(live)) != nil {
		u.Steps = append(u.Steps, Waypoint{Phase: PhaseAfter, Advice: Advise(MigrateStep(next.Name), "re-store every object at %s, which the apply made the storage version, and prune the rest from storedVersions", s)})
	}
	slices.SortStableFunc(u.Steps, func(a, b Waypoint) int { return phaseOrder[a.Phase] - phaseOrder[b.Phase] })
	return u
}

var phaseOrder = map[Phase]int{PhaseBefore: 0, PhaseApply: 1, PhaseAfter: 2}

// settle is what is left once the release is applied: the re-store and prune, the entries of
// versions no longer served.
func settle(live *apiextensionsv1.CustomResourceDefinition, f UpgradeFacts) []Waypoint {
	var out []Waypoint
	if r := refusedWays(live, PhaseAfter); r != nil {
		return r
	}
	clean := len(f.Entries) > 0
	if MigrationPending(live) || clean {
		step := MigrateStep(live.Name)
		step.CleanManagedFields = clean
		why := fmt.Sprintf("re-store every object at %s and prune the rest from storedVersions", StorageVersion(live))
		if !MigrationPending(live) {
			why = fmt.Sprintf("drop the managedFields entries at %s, which the release removed: until then a server-side apply of those objects fails", strings.Join(f.Entries, ", "))
		}
		out = append(out, Waypoint{Phase: PhaseAfter, Advice: Advise(step, "%s", why)})
	}
	return out
}

// before is what the apply needs done first: storage at a version the release keeps, nothing
// stored at a version it removes, no managedFields entry naming one.
func before(live, next *apiextensionsv1.CustomResourceDefinition, f UpgradeFacts) []Waypoint {
	crd := next.Name
	sLive, sNext := StorageVersion(live), StorageVersion(next)
	var out []Waypoint
	add := func(step *Step, format string, args ...any) { out = append(out, first(step, format, args...)) }
	removed := removedBy(live, next)
	storedRemoved := slices.ContainsFunc(removed, func(v string) bool { return slices.Contains(live.Status.StoredVersions, v) })
	switch {
	case SpecVersion(next, sLive) != nil:
		// The apply keeps today's storage version, and switches storage itself if it must.
	case Newer(sNext, sLive):
		out = append(out, switchForward(live, crd, sLive, sNext)...)
		storedRemoved = true
	default:
		out = append(out, switchBack(live, crd, sLive, sNext)...)
		storedRemoved = true
		if slices.ContainsFunc(out, func(w Waypoint) bool { return w.Decide }) {
			// What follows depends on the choice: planned again once it is made.
			return out
		}
	}
	if storedRemoved {
		if r := refusedWays(live, PhaseBefore); r != nil && len(out) == 0 {
			return r
		}
		step := MigrateStep(crd)
		why := fmt.Sprintf("re-store every object at %s and prune %s from storedVersions: the API server refuses the release while storedVersions names a version it removes", sNext, strings.Join(removed, ", "))
		if a := LossAcceptedFor(live); a != nil && len(out) == 0 {
			// Accepted by name at the switch back: the re-store takes the same loss, not asked twice.
			step.AcceptLoss = true
			why += fmt.Sprintf(", taking the loss of %s on %s accepted at the switch back to %s", strings.Join(a.Fields, ", "), Objects(a.Objects), a.Storage)
		}
		add(step, "%s", why)
	}
	if len(f.Entries) > 0 {
		out = append(out, entriesFirst(live, next, f.Entries)...)
	}
	return out
}

// switchForward takes storage to sNext, newer, through the stages the plugin checks: the release
// drops today's storage version, so the switch cannot wait for the apply.
func switchForward(live *apiextensionsv1.CustomResourceDefinition, crd, sLive, sNext string) []Waypoint {
	var out []Waypoint
	add := func(step *Step, format string, args ...any) { out = append(out, first(step, format, args...)) }
	stage := StageIntroduced
	if SpecVersion(live, sNext) == nil {
		add(IntroduceStep(crd, sNext, "NEW_MANIFEST"), "add %s to the live CRD from the release, served beside %s", sNext, sLive)
	} else if _, s, err := PairStage(live, sNext); err == nil {
		stage = s
	}
	if stage == StageIntroduced {
		add(PromoteToStep(crd, sNext, StageBridge), "check that every object survives %s→%s→%s", sNext, sLive, sNext)
	}
	add(PromoteToStep(crd, sNext, StageDeprecated), "make %s the storage version, every object checked %s→%s→%s (switched back on a loss)", sNext, sLive, sNext, sLive)
	return out
}

// switchBack takes storage down to sNext, older (a downgrade), one version at a time as rollback
// switches it, each switch checked on every object and undone on a loss.
func switchBack(live *apiextensionsv1.CustomResourceDefinition, crd, sLive, sNext string) []Waypoint {
	var out []Waypoint
	add := func(step *Step, format string, args ...any) { out = append(out, first(step, format, args...)) }
	hops := []string{sLive}
	for _, v := range live.Spec.Versions {
		if Newer(sLive, v.Name) && Newer(v.Name, sNext) {
			hops = append(hops, v.Name)
		}
	}
	SortByPriority(hops)
	hops = append(hops, sNext)
	if SpecVersion(live, sNext) == nil {
		add(IntroduceStep(crd, sNext, "NEW_MANIFEST"), "add %s to the live CRD from the release, served beside %s", sNext, hops[len(hops)-2])
	}
	for i := 0; i+1 < len(hops); i++ {
		from, to := hops[i], hops[i+1]
		if r := SwitchBackRefusedFor(live); r != nil && from == sLive && r.To == to {
			return append(out, switchBackWays(live, r, sNext)...)
		}
		if v := SpecVersion(live, to); v != nil && !v.Served {
			add(&Step{Op: OpRollback, CRD: crd, Version: from}, "serve %s again", to)
		}
		add(SwitchStorageBackStep(crd, from), "make %s the storage version (the release stores at %s), every object checked %s→%s→%s; a loss undoes the switch and names the objects and fields", to, sNext, from, to, from)
	}
	return out
}

// switchBackWays are the ways on from a switch back undone for a loss: never the same switch
// back again, but the fields kept, the loss accepted by name, or the release not taken.
func switchBackWays(live *apiextensionsv1.CustomResourceDefinition, r *Refused, sNext string) []Waypoint {
	fields, from := strings.Join(r.Fields, ", "), r.Storage
	keepIn := r.To
	if r.To != sNext {
		keepIn = fmt.Sprintf("%s (and of every version down to %s, which the release stores at)", r.To, sNext)
	}
	accept := SwitchStorageBackStep(live.Name, from)
	accept.AcceptLoss = true
	return []Waypoint{
		{Phase: PhaseBefore, Decide: true, Advice: Advise(nil, "keep the fields: add %s to the schema of %s in the release's manifest and in the CRD the cluster runs, apply that one, and run this again; the switch back from %s to %s was undone: storing at %s would lose them on %s (%s)",
			fields, keepIn, from, r.To, r.To, Objects(r.Objects), firstOf(r.First, r.Objects))},
		{Phase: PhaseBefore, Decide: true, Advice: Advise(accept, "or accept the loss of %s on %s by name: the switch to %s stands, and a write of those objects drops them", fields, Objects(r.Objects), r.To)},
		{Phase: PhaseBefore, Decide: true, Advice: Advise(nil, "or stay on the current release: %s stays the storage version and nothing is lost (the API server refuses the release while storedVersions names %s)", from, from)},
	}
}

// entriesFirst moves the objects' managedFields entries at the versions the release removes to
// the storage version before it lands, while those versions are listed: after it, every
// server-side apply of such an object fails. Served ones are named to the cleanup rather than
// stopped first: the release, not the plugin, retires them (check names the clients it breaks),
// and a CRD edit now would only be the owner's to take back.
func entriesFirst(live, next *apiextensionsv1.CustomResourceDefinition, entries []string) []Waypoint {
	crd, storage := next.Name, StorageVersion(next)
	step := CleanManagedFieldsStep(crd)
	for _, v := range entries {
		if lv := SpecVersion(live, v); lv != nil && lv.Served {
			step.CleanVersions = append(step.CleanVersions, v)
		}
	}
	why := fmt.Sprintf("move the objects' managedFields entries at %s to %s while %s is still listed: after the apply, a server-side apply of them would fail", strings.Join(entries, ", "), storage, strings.Join(entries, ", "))
	if len(step.CleanVersions) > 0 {
		why += fmt.Sprintf(" (a client that writes at %s again before the apply adds its entry back; the apply breaks that client anyway)", strings.Join(step.CleanVersions, ", "))
	}
	return []Waypoint{first(step, "%s", why)}
}

// first is a step before the apply.
func first(step *Step, format string, args ...any) Waypoint {
	return Waypoint{Phase: PhaseBefore, Advice: Advise(step, format, args...)}
}

// refusedWays are the ways on from a migrate the last run refused for a loss: never the same
// migrate again, but the loss accepted by name, the field kept, or the switch undone.
func refusedWays(live *apiextensionsv1.CustomResourceDefinition, phase Phase) []Waypoint {
	r := RefusedFor(live)
	if r == nil {
		return nil
	}
	pending := slices.DeleteFunc(slices.Clone(live.Status.StoredVersions), func(v string) bool { return v == r.Storage })
	fields := strings.Join(r.Fields, ", ")
	ways := []Waypoint{
		{Phase: phase, Decide: true, Advice: Advise(nil, "keep the fields: add %s to %s's schema in the CRD manifest (and the release), apply it, and migrate again; the last migrate left %s stored at %s that re-storing at %s would lose them (%s)",
			fields, r.Storage, Objects(r.Objects), strings.Join(pending, ", "), r.Storage, firstOf(r.First, r.Objects))},
		{Phase: phase, Decide: true, Advice: Advise(&Step{Op: OpMigrate, CRD: live.Name, AcceptLoss: true}, "or accept the loss of %s on %s by name", fields, Objects(r.Objects))},
	}
	if back := backTo(live, r.Storage); back != "" {
		ways = append(ways, Waypoint{Phase: phase, Decide: true, Advice: Advise(SwitchStorageBackStep(live.Name, r.Storage), "or make %s the storage version again, where the objects keep what they hold", back)})
	}
	return ways
}

// backTo is the version a switch back from storage lands on: the highest listed below it.
func backTo(crd *apiextensionsv1.CustomResourceDefinition, storage string) string {
	best := ""
	for _, v := range crd.Spec.Versions {
		if Newer(storage, v.Name) && (best == "" || Newer(v.Name, best)) {
			best = v.Name
		}
	}
	return best
}

// removedBy lists the versions of live that next lacks, highest priority first.
func removedBy(live, next *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range live.Spec.Versions {
		if SpecVersion(next, v.Name) == nil {
			out = append(out, v.Name)
		}
	}
	for _, v := range live.Status.StoredVersions {
		if SpecVersion(live, v) == nil && SpecVersion(next, v) == nil && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	SortByPriority(out)
	return out
}

// Applied says whether live serves next's versions as next declares them: the same versions,
// each served, storage and deprecated alike, with the same warning and schema.
func Applied(live, next *apiextensionsv1.CustomResourceDefinition) bool {
	if len(live.Spec.Versions) != len(next.Spec.Versions) {
		return false
	}
	for _, n := range next.Spec.Versions {
		l := SpecVersion(live, n.Name)
		if l == nil || l.Served != n.Served || l.Storage != n.Storage || l.Deprecated != n.Deprecated ||
			deref(l.DeprecationWarning) != deref(n.DeprecationWarning) || !equality.Semantic.DeepEqual(l.Schema, n.Schema) {
			return false
		}
	}
	return true
}
