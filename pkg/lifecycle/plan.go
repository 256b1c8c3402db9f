package lifecycle

import (
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Plan is one lifecycle step: the field changes it makes and the CRD after.
type Plan struct {
	CRD     string   `json:"crd"`
	Pair    Pair     `json:"pair"`
	From    Stage    `json:"from"`
	To      Stage    `json:"to"`
	Changes []Change `json:"changes"`
	// Notes say what the step means for objects and clients, and what next.
	Notes []Advice `json:"notes,omitempty"`
	// After is the CRD with the step applied; nil only for refusals.
	After *apiextensionsv1.CustomResourceDefinition `json:"-"`
}

// PromoteOptions carries what some steps need from outside the CRD.
type PromoteOptions struct {
	// Manifest holds the new version's definition, for introduced.
	Manifest *apiextensionsv1.CustomResourceDefinition
	// Verification is the passed round-trip check, for bridge.
	Verification *Verification
	// DeprecationWarning overrides the default warning, for deprecated.
	DeprecationWarning string
	// Offline plans for a manifest file: a file cannot show the cluster's
	// objects, so bridge (a check of those objects) is left to the cluster
	// and introduced moves on to deprecated.
	Offline bool
}

// forward is the stage each stage promotes to.
var forward = map[Stage]Stage{
	StageAbsent:     StageIntroduced,
	StageIntroduced: StageBridge,
	StageBridge:     StageDeprecated,
	StageServed:     StageDeprecated,
	StageDeprecated: StageBlocked,
	StageBlocked:    StageRemoved,
}

// NextStage says where promoting version name goes: the stage after the
// one its pair is in. A target (to) other than that stage is refused with the
// command that gets to the next one: steps are never skipped.
func NextStage(crd *apiextensionsv1.CustomResourceDefinition, name string, to Stage, offline bool) (Pair, Stage, Stage, error) {
	pair, from, err := PairStage(crd, name)
	if err != nil {
		return Pair{}, "", "", err
	}
	next, ok := forward[from]
	if offline && from == StageIntroduced {
		next = StageDeprecated
	}
	if !ok {
		return Pair{}, "", "", refuse(nil, "%s has no stage after %s", name, from)
	}
	if to != "" && to != next {
		if !slices.Contains(Stages, to) {
			return Pair{}, "", "", refuse(nil, "unknown stage %q: stages are %s", to, stageList())
		}
		return Pair{}, "", "", refuse(promoteStep(crd.Name, name, next),
			"%s is %s; the next stage is %s, not %s: stages are taken one at a time", name, from, next, to)
	}
	return pair, from, next, nil
}

// PlanPromote plans moving version name's pair one stage forward.
func PlanPromote(crd *apiextensionsv1.CustomResourceDefinition, name string, to Stage, opts PromoteOptions) (*Plan, error) {
	pair, from, next, err := NextStage(crd, name, to, opts.Offline)
	if err != nil {
		return nil, err
	}
	if opts.Manifest != nil && next != StageIntroduced {
		return nil, refuse(PromoteTo(crd.Name, pair.New, next), "a CRD manifest is taken only to introduce a version, and %s is in %s already (its next stage is %s)", pair.New, crd.Name, next)
	}
	p := &Plan{CRD: crd.Name, Pair: pair, From: from, To: next, After: crd.DeepCopy()}
	if err := p.promote(crd, opts); err != nil {
		return nil, err
	}
	p.Changes = diffVersions(crd, p.After)
	return p, nil
}

func (p *Plan) promote(crd *apiextensionsv1.CustomResourceDefinition, opts PromoteOptions) error {
	after, old, nu := p.After, p.Pair.Old, p.Pair.New
	switch p.To {
	case StageIntroduced:
		v, err := manifestVersion(crd, nu, opts.Manifest)
		if err != nil {
			return err
		}
		after.Spec.Versions = append(after.Spec.Versions, v)
		if opts.Manifest.Spec.Conversion != nil {
			after.Spec.Conversion = opts.Manifest.Spec.Conversion.DeepCopy()
		}
		p.Notes = append(p.Notes, advise(nil, "%s is served next to %s; %s stays the storage version", nu, old, old),
			advise(PromoteTo(crd.Name, nu, StageBridge), "next, check the round trip and record bridge"))
	case StageBridge:
		rec := opts.Verification
		if rec == nil || rec.From != old {
			return refuse(PromoteTo(crd.Name, nu, StageBridge),
				"bridge needs a passed round-trip check of %s against %s", nu, old)
		}
		stamped := *rec
		stamped.Fingerprint = Fingerprint(after, old, nu)
		setVerification(after, nu, stamped)
		p.Notes = append(p.Notes, advise(nil, "%s round-trip %s→%s→%s without loss; %s→%s→%s (what re-storing objects at %s makes permanent) is checked by the next step, right after the switch", Objects(rec.Objects), nu, old, nu, old, nu, old, nu))
	case StageDeprecated:
		if !SpecVersion(after, nu).Served {
			return refuse(nil, "%s is not served: deprecating %s would leave clients no version to move to", nu, old)
		}
		o := SpecVersion(after, old)
		switched := p.From != StageServed
		if switched {
			SpecVersion(after, nu).Storage, o.Storage = true, false
		}
		o.Deprecated = true
		warning := opts.DeprecationWarning
		if warning == "" {
			warning = fmt.Sprintf("%s/%s %s is deprecated; use %s/%s %s", crd.Spec.Group, old, crd.Spec.Names.Kind, crd.Spec.Group, nu, crd.Spec.Names.Kind)
		}
		o.DeprecationWarning = &warning
		p.Notes = append(p.Notes, advise(nil, "clients of %s now get the warning %q", old, warning))
		if switched {
			p.Notes = append(p.Notes, advise(Migrate(crd.Name), "objects are written at %s from now on; those stored at %s must be re-stored", nu, old))
		}
		if p.From == StageIntroduced {
			p.Notes = append(p.Notes, advise(PromoteTo(crd.Name, nu, StageBridge), "bridge is checked on the cluster, not in a file: before this manifest is applied, run this there"))
		}
	case StageBlocked:
		// Once old is no longer served, what its objects hold can be
		// checked only where another version shows it: they are re-stored
		// while it can still be checked.
		if slices.Contains(crd.Status.StoredVersions, old) {
			return refuse(Migrate(crd.Name),
				"%s is still in status.storedVersions: objects may be stored at it; migrate (which checks each object and prunes storedVersions) before it stops being served", old)
		}
		SpecVersion(after, old).Served = false
		p.Notes = append(p.Notes, advise(nil, "requests for %s now fail with 404; objects stay readable through %s", old, nu))
		if opts.Offline {
			p.Notes = append(p.Notes, storedPrecondition(crd.Name, old, "stops being served"))
		}
	case StageRemoved:
		if slices.Contains(crd.Status.StoredVersions, old) {
			return refuse(Migrate(crd.Name),
				"%s is still in status.storedVersions: objects may be stored at it; migrate (which prunes storedVersions) before removing it", old)
		}
		if opts.Offline {
			p.Notes = append(p.Notes, storedPrecondition(crd.Name, old, "is removed"))
		}
		after.Spec.Versions = slices.DeleteFunc(after.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == old })
		delete(after.Annotations, VerifiedAnnotationPrefix+nu)
		p.Notes = append(p.Notes, advise(CleanManagedFields(crd.Name), "%s is gone; managedFields entries naming it break server-side apply: promote cleans them on the cluster; by hand", old))
	}
	return nil
}

// PlanRollback plans moving version name's pair one stage back. With name
// empty, the CRD's one pair in flight is meant.
func PlanRollback(crd *apiextensionsv1.CustomResourceDefinition, name string) (*Plan, error) {
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
	after, old, nu := p.After, pair.Old, pair.New
	switch from {
	case StageAbsent:
		return nil, refuse(nil, "%s is not in spec.versions: nothing to roll back", nu)
	case StageIntroduced:
		if slices.Contains(crd.Status.StoredVersions, nu) {
			return nil, refuse(Migrate(crd.Name),
				"%s is in status.storedVersions: objects may be stored at it, so it cannot be removed before they are re-stored at %s", nu, old)
		}
		p.To = StageAbsent
		after.Spec.Versions = slices.DeleteFunc(after.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == nu })
		delete(after.Annotations, VerifiedAnnotationPrefix+nu)
		p.Notes = append(p.Notes, advise(nil, "%s is no longer served; clients using it get 404", nu))
	case StageBridge:
		p.To = StageIntroduced
		delete(after.Annotations, VerifiedAnnotationPrefix+nu)
	case StageDeprecated, StageServed:
		p.To = StageBridge
		o := SpecVersion(after, old)
		o.Storage, o.Deprecated, o.DeprecationWarning = true, false, nil
		SpecVersion(after, nu).Storage = false
		// Objects written at old from now on were never checked: the
		// old→new→old record no longer covers every object stored at old.
		delete(after.Annotations, VerifiedAnnotationPrefix+old)
		p.Notes = append(p.Notes,
			advise(Migrate(crd.Name), "objects written since %s became storage are stored at %s; re-store them at %s", nu, nu, old))
	case StageBlocked:
		p.To = StageDeprecated
		SpecVersion(after, old).Served = true
	}
	p.Changes = diffVersions(crd, p.After)
	return p, nil
}

// InFlight finds the one version whose pair is moving: a served version
// newer than storage, or the storage version while an older one remains.
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

func manifestVersion(crd *apiextensionsv1.CustomResourceDefinition, name string, manifest *apiextensionsv1.CustomResourceDefinition) (apiextensionsv1.CustomResourceDefinitionVersion, error) {
	if manifest == nil {
		// Most often a typo; else a version to introduce, whose schema is
		// in a manifest.
		unknown := unknownVersion(crd, name)
		return apiextensionsv1.CustomResourceDefinitionVersion{}, &Refusal{Reason: unknown.Error(), Instead: Introduce(crd.Name, name, "CRD_MANIFEST"), Err: unknown}
	}
	if manifest.Name != crd.Name {
		return apiextensionsv1.CustomResourceDefinitionVersion{}, refuse(nil, "the manifest is CRD %s, not %s", manifest.Name, crd.Name)
	}
	v := SpecVersion(manifest, name)
	if v == nil {
		return apiextensionsv1.CustomResourceDefinitionVersion{}, refuse(nil, "the manifest for %s has no version %s", crd.Name, name)
	}
	out := *v.DeepCopy()
	out.Served, out.Storage, out.Deprecated, out.DeprecationWarning = true, false, false, nil
	return out, nil
}

func setVerification(crd *apiextensionsv1.CustomResourceDefinition, v string, rec Verification) {
	if crd.Annotations == nil {
		crd.Annotations = map[string]string{}
	}
	k, val := rec.Annotation(v)
	crd.Annotations[k] = val
}

func promoteStep(crd, name string, to Stage) *Step {
	if to == StageIntroduced {
		return Introduce(crd, name, "CRD_MANIFEST")
	}
	return PromoteTo(crd, name, to)
}

func stageList() string {
	s := make([]string, len(Stages))
	for i, st := range Stages {
		s[i] = string(st)
	}
	return fmt.Sprint(s)
}

// storedPrecondition is what a file cannot show: whether a cluster the file
// is applied to still names old in status.storedVersions.
func storedPrecondition(crd, old, then string) Advice {
	return advise(Migrate(crd), "precondition: on every cluster this manifest is applied to, %s must be gone from status.storedVersions before %s; run there", old, then)
}
