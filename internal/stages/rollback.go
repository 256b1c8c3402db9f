package stages

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// RollbackOptions carries what a step back needs from outside the CRD.
type RollbackOptions struct {
	// Offline plans for a manifest file, which shows neither storedVersions nor the bridge record.
	Offline bool
	// SwitchStorage switches storage back to the old version even where no step switched it away (a
	// downgrade, another tool's step); the old version must be served, and the new stays served.
	SwitchStorage bool
}

// PlanRollback plans moving name's pair one stage back (empty: the one pair in flight): what the
// step recorded (StepsAnnotation) is put back; a step taken by hand or by an older release, by rule.
func PlanRollback(crd *apiextensionsv1.CustomResourceDefinition, name string, opts RollbackOptions) (*Plan, error) {
	if name == "" {
		var err error
		if name, err = InFlight(crd); err != nil {
			return nil, err
		}
	}
	pair, from, err := PairStage(crd, name)
	if err != nil {
		return nil, err
	}
	p := &Plan{CRD: crd.Name, Pair: pair, From: from, After: crd.DeepCopy()}
	old, nu := pair.Old, pair.New
	switch from {
	case StageAbsent:
		return nil, refuse(nil, "%s is not in spec.versions: nothing to roll back", nu)
	case StageIntroduced:
		if slices.Contains(crd.Status.StoredVersions, nu) {
			return nil, refuse(MigrateStep(crd.Name),
				"%s is in status.storedVersions: objects may be stored at it, so it cannot be removed before they are re-stored at %s", nu, old)
		}
		if opts.Offline {
			// A file cannot tell introduced from bridge, and the schema is the author's.
			return nil, refuse(nil, "%s is a version of this file with its schema: taking it out is an edit of yours, not a step back (on a cluster, rollback removes it while nothing is stored at it)", nu)
		}
	}
	rec, ok := lastStep(crd, nu, from)
	if ok && restore(p, crd, rec) && (!opts.SwitchStorage || switchesBack(crd, p.After, old)) {
		dropStep(p.After, rec)
		p.Restored = &rec
	} else {
		// The record stays: undoing this step back (a switch check found a loss) keeps it.
		p.After, p.Notes, p.Restored = crd.DeepCopy(), nil, nil
		if err := byRule(p, crd, opts); err != nil {
			return nil, err
		}
	}
	if opts.SwitchStorage && !switchesBack(crd, p.After, old) {
		return nil, switchRefused(crd, p.Pair, from)
	}
	if switchesBack(crd, p.After, old) {
		switchBackNotes(p, crd, opts)
	}
	p.Changes = diffVersions(crd, p.After)
	return p, nil
}

// restore puts back what the step recorded, on the CRD as it is (what others changed since stays);
// false, changing nothing, where the record no longer describes the CRD.
func restore(p *Plan, crd *apiextensionsv1.CustomResourceDefinition, rec StepRecord) bool {
	after := p.After.DeepCopy()
	var restored, left []string
	for _, c := range rec.Changes {
		switch c.Field {
		case FieldVersion:
			// Only the version the step brought in goes: a record is an annotation anyone may write.
			if c.From == "" && c.Version == p.Pair.New && rec.From == StageAbsent && SpecVersion(after, c.Version) != nil {
				after.Spec.Versions = slices.DeleteFunc(after.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == c.Version })
				delete(after.Annotations, VerifiedAnnotationPrefix+c.Version)
				restored = append(restored, c.Version)
			}
			continue
		case FieldAnnotation:
			// A record the step dropped is not put back: what proved it may no longer hold.
			if c.From == "" {
				delete(after.Annotations, VerifiedAnnotationPrefix+c.Version)
				restored = append(restored, c.Version)
			}
			continue
		case FieldConversion:
			p.Notes = append(p.Notes, Advise(nil, "the conversion settings this step took from its manifest stay (%s; before it: %s): a step back cannot rebuild them; put yours back from your manifest", c.To, c.From))
			continue
		}
		v := SpecVersion(after, c.Version)
		if v == nil {
			continue
		}
		if now, _ := flag(v, c.Field); now != c.To {
			if c.Field == FieldStorage {
				return false
			}
			left = append(left, fmt.Sprintf("%s.%s", c.Version, c.Field))
			continue
		}
		setFlag(v, c.Field, c.From)
		restored = append(restored, c.Version)
	}
	if len(restored) == 0 || !storageBack(crd, after, p.Pair) {
		return false
	}
	p.After, p.To = after, rec.From
	if len(left) > 0 {
		p.Notes = append(p.Notes, Advise(nil, "changed by another writer since the step, so left as it is: %s", strings.Join(left, ", ")))
	}
	switch {
	case rec.From == StageAbsent:
		p.Notes = append(p.Notes, Advise(nil, "%s is no longer served; clients using it get 404", p.Pair.New))
	case rec.To == StageBlocked:
		p.Notes = append(p.Notes, Advise(nil, "served again as before the step: %s", strings.Join(servedAgain(crd, after), ", ")))
	case !switchesBack(crd, after, p.Pair.Old) && rec.To == StageDeprecated:
		p.Notes = append(p.Notes, Advise(nil, "%s stays the storage version: the step did not switch it, so only the deprecation it made is undone", StorageVersion(after)))
	}
	return true
}

// storageBack says whether after keeps before's storage version or switches it from the pair's
// new version back to its old one, the only switch a step back makes.
func storageBack(before, after *apiextensionsv1.CustomResourceDefinition, pair Pair) bool {
	var storage []string
	for _, v := range after.Spec.Versions {
		if v.Storage {
			storage = append(storage, v.Name)
		}
	}
	if len(storage) != 1 {
		return false
	}
	was := StorageVersion(before)
	return storage[0] == was || (was == pair.New && storage[0] == pair.Old)
}

// byRule steps back where no record says what the step changed.
func byRule(p *Plan, crd *apiextensionsv1.CustomResourceDefinition, opts RollbackOptions) error {
	after, nu := p.After, p.Pair.New
	switch p.From {
	case StageIntroduced:
		p.To = StageAbsent
		after.Spec.Versions = slices.DeleteFunc(after.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == nu })
		delete(after.Annotations, VerifiedAnnotationPrefix+nu)
		p.Notes = append(p.Notes, Advise(nil, "%s is no longer served; clients using it get 404", nu))
	case StageBridge:
		p.To = StageIntroduced
		delete(after.Annotations, VerifiedAnnotationPrefix+nu)
	case StageDeprecated, StageServed:
		return rollbackDeprecated(p, crd, opts)
	case StageBlocked:
		p.To = StageDeprecated
		// The step to blocked stopped serving every older version: serve them again, deprecated.
		for _, o := range olderVersions(after, nu) {
			o.Served, o.Deprecated = true, true
		}
		p.Notes = append(p.Notes, Advise(nil, "served again, deprecated: clients of %s get a warning", strings.Join(names(olderVersions(after, nu)), ", ")))
	}
	return nil
}

// switchesBack says whether after makes old the storage version again.
func switchesBack(before, after *apiextensionsv1.CustomResourceDefinition, old string) bool {
	b, a := SpecVersion(before, old), SpecVersion(after, old)
	return b != nil && a != nil && !b.Storage && a.Storage
}

// switchBackNotes says what a switch back to old means: objects written at old from now on were
// never checked, so the old→new→old record no longer covers them.
func switchBackNotes(p *Plan, crd *apiextensionsv1.CustomResourceDefinition, opts RollbackOptions) {
	old, nu := p.Pair.Old, p.Pair.New
	delete(p.After.Annotations, VerifiedAnnotationPrefix+old)
	p.Notes = append(p.Notes,
		Advise(MigrateStep(crd.Name), "objects written since %s became storage are stored at %s; re-store them at %s", nu, nu, old))
	if opts.Offline {
		p.Notes = append(p.Notes, Advise(&Step{Op: OpRollback, CRD: crd.Name},
			"precondition: switching storage back to %s is checked on the cluster, not in a file (a field of %s that %s lacks would be lost on every write): on a cluster, this checks every object right after the switch and undoes it on loss; run it there before this manifest is applied", old, nu, old))
	}
}

func servedAgain(before, after *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range after.Spec.Versions {
		if b := SpecVersion(before, v.Name); b != nil && !b.Served && v.Served {
			out = append(out, v.Name)
		}
	}
	return out
}

// rollbackDeprecated undoes the step to deprecated: where storedVersions names old, it switched
// storage, so switch back (the caller checks the objects); else only undo the deprecation.
func rollbackDeprecated(p *Plan, crd *apiextensionsv1.CustomResourceDefinition, opts RollbackOptions) error {
	after, old, nu := p.After, p.Pair.Old, p.Pair.New
	o := SpecVersion(after, old)
	wasStorage := slices.Contains(crd.Status.StoredVersions, old) || (opts.Offline && len(crd.Status.StoredVersions) == 0) || opts.SwitchStorage
	if wasStorage && o.Served {
		o.Storage, o.Deprecated, o.DeprecationWarning = true, false, nil
		SpecVersion(after, nu).Storage = false
		p.To = StageIntroduced
		if isBridged(after, nu, old) {
			p.To = StageBridge
		}
		return nil
	}
	var undone []string
	for _, v := range olderVersions(after, nu) {
		if v.Served && v.Deprecated {
			v.Deprecated, v.DeprecationWarning = false, nil
			undone = append(undone, v.Name)
		}
	}
	if len(undone) == 0 {
		return refuse(nil, "%s is the storage version and %s is not in status.storedVersions, so there is no storage switch to undo, and no older version is deprecated: nothing to roll back", nu, old)
	}
	p.To = StageServed
	p.Notes = append(p.Notes, Advise(nil, "%s stays the storage version: %s was not in status.storedVersions (never storage, or its objects were re-stored and pruned), so only the deprecation of %s is undone; clients get no warning", nu, old, strings.Join(undone, ", ")))
	return nil
}

// switchRefused says why storage cannot go back to the pair's old version in one step, and what first.
func switchRefused(crd *apiextensionsv1.CustomResourceDefinition, pair Pair, from Stage) error {
	switch {
	case StorageVersion(crd) != pair.New:
		return refuse(nil, "%s is not the storage version (%s is): there is no storage to switch back from it", pair.New, StorageVersion(crd))
	case from == StageBlocked:
		return refuse(&Step{Op: OpRollback, CRD: crd.Name, Version: pair.New},
			"%s is not served: serve it again first (rollback to deprecated), then switch storage to it", pair.Old)
	}
	return refuse(nil, "%s cannot become the storage version again from stage %s", pair.Old, from)
}

func names(versions []*apiextensionsv1.CustomResourceDefinitionVersion) []string {
	out := make([]string, len(versions))
	for i, v := range versions {
		out[i] = v.Name
	}
	return out
}

// InFlight finds the one version whose pair is moving: a served version newer than storage, or
// storage while an older one remains.
func InFlight(crd *apiextensionsv1.CustomResourceDefinition) (string, error) {
	storage, err := singleStorage(crd)
	if err != nil {
		return "", err
	}
	var names []string
	for _, v := range crd.Spec.Versions {
		if v.Name != storage && v.Served && !v.Deprecated && Newer(v.Name, storage) {
			names = append(names, v.Name)
		}
	}
	if newestOlder(crd, storage) != nil {
		names = append(names, storage)
	}
	switch len(names) {
	case 0:
		return "", refuse(nil, "%s has one version and nothing to roll back; a removed version cannot be brought back by the plugin (its schema is gone): re-add it from your manifest", crd.Name)
	case 1:
		return names[0], nil
	}
	return "", refuse(nil, "%s has several versions in flight (%v): name the one to roll back", crd.Name, names)
}

// PlanUndo plans taking back a just-applied step that switched storage, when the check after it
// failed: each flag it changed goes back on the CRD as it is now (others' changes stay), as does
// its record, and forget's verification records go. The version to be storage again must remain.
func PlanUndo(crd *apiextensionsv1.CustomResourceDefinition, step *Plan, forget ...string) (*Plan, error) {
	p := &Plan{CRD: crd.Name, Pair: step.Pair, From: step.To, To: step.From, After: crd.DeepCopy()}
	for _, c := range step.Changes {
		v := SpecVersion(p.After, c.Version)
		if v == nil && c.Field == FieldStorage && c.From == "true" {
			return nil, refuse(nil, "%s changed since the step: %s, to be the storage version again, is gone from spec.versions", crd.Name, c.Version)
		}
		if v == nil {
			continue
		}
		setFlag(v, c.Field, c.From)
	}
	for _, v := range forget {
		delete(p.After.Annotations, VerifiedAnnotationPrefix+v)
	}
	// An undone step is no step to roll back; an undone step back leaves its step to roll back again.
	if step.Record != nil {
		dropStep(p.After, *step.Record)
	}
	if r := step.Restored; r != nil {
		// A step back open as a window kept the record it takes back (OpenSwitchBack): not twice.
		if last, ok := lastStep(p.After, r.Version, r.To); !ok || last.From != r.From {
			setSteps(p.After, PushStep(Steps(p.After), *r))
		}
	}
	p.Changes = diffVersions(crd, p.After)
	return p, nil
}

// switchedTo is the version the window's switch made storage.
func switchedTo(w *Window) string {
	for _, c := range w.Record.Changes {
		if c.Field == FieldStorage && c.To == "true" {
			return c.Version
		}
	}
	return w.Record.Version
}

// PlanCloseSwitchBack plans closing a step back's window once its check held (or its loss was
// accepted): the switch stands, and its record goes with the record it took back (the pair's
// record before it, its inverse), as a step back that was never a window leaves them.
func PlanCloseSwitchBack(crd *apiextensionsv1.CustomResourceDefinition, w *Window) (*Plan, error) {
	p := &Plan{CRD: crd.Name, Pair: windowPlan(w).Pair, From: w.Record.From, To: w.Record.To, After: crd.DeepCopy()}
	steps := Steps(p.After)
	i := lastOf(steps, w.Record.Version)
	if i < 0 || steps[i].Window != w.Kind || steps[i].From != w.Record.From || steps[i].To != w.Record.To {
		return nil, refuse(nil, "%s: the record of the switch back to %s changed since its check began", crd.Name, switchedTo(w))
	}
	steps = slices.Delete(steps, i, i+1)
	if j := lastOf(steps, w.Record.Version); j >= 0 && steps[j].To == w.Record.From && steps[j].From == w.Record.To {
		steps = slices.Delete(steps, j, j+1)
	}
	setSteps(p.After, steps)
	return p, nil
}

// OpenSwitchBack marks a step back that switches storage as a window until its check holds
// (rule 27): its record goes on the CRD, marked open, and the record it takes back stays until
// then, so that a killed run's next command finds the switch, checks it, and keeps it or puts
// back both storage and the record.
func OpenSwitchBack(p *Plan, before *apiextensionsv1.CustomResourceDefinition) {
	rec := recordOf(p)
	rec.Window = WindowSwitchCheck
	p.Record = &rec
	setSteps(p.After, PushStep(Steps(before), rec))
}
