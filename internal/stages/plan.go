package stages

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// PromoteOptions carries what some steps need from outside the CRD.
type PromoteOptions struct {
	// Manifest holds the new version's definition, for introduced.
	Manifest *apiextensionsv1.CustomResourceDefinition
	// Verification is the passed round-trip check, for bridge.
	Verification *Verification
	// DeprecationWarning overrides the default warning, for deprecated.
	DeprecationWarning string
	// ConversionFromFile takes the manifest's conversion for introduced, else the live one stays (a
	// cainjector's caBundle is the cluster's). A live caBundle stays where the manifest has none.
	ConversionFromFile bool
	// Offline plans for a manifest file, which shows no objects: introduced moves on to deprecated.
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

// Target is what a promote means on the CRD: the version, its pair, its stage and the next one.
type Target struct {
	Version    string
	Pair       Pair
	From, Next Stage
}

// PromoteTarget says where promoting name goes (empty: the one pair in flight): the next stage.
// Any other target is refused with the command for the next one: steps are never skipped.
func PromoteTarget(crd *apiextensionsv1.CustomResourceDefinition, name string, to Stage, offline bool) (Target, error) {
	if name == "" {
		var err error
		if name, err = InFlight(crd); err != nil {
			// Versions besides storage, all newer, none of which can take over: say why, not "nothing to roll back".
			if storage, e := singleStorage(crd); e == nil && len(crd.Spec.Versions) > 1 && newestOlder(crd, storage) == nil && takesOver(crd, storage) == "" {
				return Target{}, refuse(nil, "%s has no pair in flight: %s", crd.Name, noWayForward(crd))
			}
			if len(crd.Spec.Versions) == 1 {
				// Nothing in flight: the next pair begins with a version to introduce.
				return Target{}, &Refusal{Reason: fmt.Sprintf("%s has one version, %s, and no pair in flight: name the version to introduce, with the manifest that has its schema", crd.Name, crd.Spec.Versions[0].Name),
					Instead: IntroduceStep(crd.Name, "VERSION", "CRD_MANIFEST")}
			}
			return Target{}, err
		}
	}
	pair, from, next, err := nextStage(crd, name, to, offline)
	return Target{Version: name, Pair: pair, From: from, Next: next}, err
}

func nextStage(crd *apiextensionsv1.CustomResourceDefinition, name string, to Stage, offline bool) (Pair, Stage, Stage, error) {
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

// PlanPromote plans moving name's pair one stage forward (empty name: the one pair in flight).
func PlanPromote(crd *apiextensionsv1.CustomResourceDefinition, name string, to Stage, opts PromoteOptions) (*Plan, error) {
	t, err := PromoteTarget(crd, name, to, opts.Offline)
	if err != nil {
		return nil, err
	}
	pair, from, next := t.Pair, t.From, t.Next
	if opts.Manifest != nil && next != StageIntroduced {
		return nil, refuse(PromoteToStep(crd.Name, pair.New, next), "a CRD manifest is taken only to introduce a version, and %s is in %s already (its next stage is %s)", pair.New, crd.Name, next)
	}
	p := &Plan{CRD: crd.Name, Pair: pair, From: from, To: next, After: crd.DeepCopy()}
	if err := promote(p, crd, opts); err != nil {
		return nil, err
	}
	p.Changes = diffVersions(crd, p.After)
	record(p, crd)
	return p, nil
}

func promote(p *Plan, crd *apiextensionsv1.CustomResourceDefinition, opts PromoteOptions) error {
	after, old, nu := p.After, p.Pair.Old, p.Pair.New
	switch p.To {
	case StageIntroduced:
		v, err := manifestVersion(crd, nu, opts.Manifest)
		if err != nil {
			return err
		}
		after.Spec.Versions = append(after.Spec.Versions, v)
		p.Notes = append(p.Notes, takeConversion(crd, after, nu, opts)...)
		p.Notes = append(p.Notes, Advise(nil, "%s is served next to %s; %s stays the storage version", nu, old, old),
			Advise(PromoteToStep(crd.Name, nu, StageBridge), "next, check the round trip and record bridge"))
	case StageBridge:
		rec := opts.Verification
		if rec == nil || rec.From != old {
			return refuse(PromoteToStep(crd.Name, nu, StageBridge),
				"bridge needs a passed round-trip check of %s against %s", nu, old)
		}
		stamped := *rec
		stamped.Fingerprint = Fingerprint(after, old, nu)
		setVerification(after, nu, stamped)
		p.Notes = append(p.Notes, Advise(nil, "%s round-trip %s→%s→%s without loss; %s→%s→%s (what re-storing objects at %s makes permanent) is checked by the next step, right after the switch", Objects(rec.Objects), nu, old, nu, old, nu, old, nu))
	case StageDeprecated:
		if !SpecVersion(after, nu).Served {
			return refuse(nil, "%s is not served: deprecating %s would leave clients no version to move to", nu, old)
		}
		switched := p.From != StageServed
		if switched {
			SpecVersion(after, nu).Storage, SpecVersion(after, old).Storage = true, false
		}
		// Deprecate every served older version: one left unwarned would hold the pair here for good.
		for _, o := range olderVersions(after, nu) {
			if !o.Served || o.Deprecated {
				continue
			}
			warning := opts.DeprecationWarning
			if warning == "" {
				warning = fmt.Sprintf("%s/%s %s is deprecated; use %s/%s %s", crd.Spec.Group, o.Name, crd.Spec.Names.Kind, crd.Spec.Group, nu, crd.Spec.Names.Kind)
			}
			o.Deprecated, o.DeprecationWarning = true, &warning
			p.Notes = append(p.Notes, Advise(nil, "clients of %s now get the warning %q", o.Name, warning))
		}
		if switched {
			p.Notes = append(p.Notes, Advise(MigrateStep(crd.Name), "objects are written at %s from now on; those stored at %s must be re-stored", nu, old))
		}
		if p.From == StageIntroduced {
			p.Notes = append(p.Notes, Advise(PromoteToStep(crd.Name, nu, StageBridge), "bridge is checked on the cluster, not in a file: before this manifest is applied, run this there"))
		}
	case StageBlocked:
		// Re-store first: once unserved, a version's objects can be checked only through another.
		if stored := storedOlder(crd, nu); len(stored) > 0 {
			return refuse(MigrateStep(crd.Name),
				"%s still in status.storedVersions: objects may be stored at it; migrate (which checks each object and prunes storedVersions) before it stops being served", isAre(stored))
		}
		var blocked []string
		for _, o := range olderVersions(after, nu) {
			if o.Served {
				o.Served = false
				blocked = append(blocked, o.Name)
			}
		}
		p.Notes = append(p.Notes, Advise(nil, "requests for %s now fail with 404; objects stay readable through %s", strings.Join(blocked, ", "), nu))
		if opts.Offline {
			p.Notes = append(p.Notes, storedPrecondition(crd.Name, strings.Join(blocked, ", "), "stops serving"))
		}
	case StageRemoved:
		if stored := storedOlder(crd, nu); len(stored) > 0 {
			return refuse(MigrateStep(crd.Name),
				"%s still in status.storedVersions: objects may be stored at it; migrate (which prunes storedVersions) before removing it", isAre(stored))
		}
		var removed []string
		for _, o := range olderVersions(crd, nu) {
			removed = append(removed, o.Name)
			delete(after.Annotations, VerifiedAnnotationPrefix+o.Name)
		}
		if opts.Offline {
			p.Notes = append(p.Notes, storedPrecondition(crd.Name, strings.Join(removed, ", "), "removes"))
		}
		after.Spec.Versions = slices.DeleteFunc(after.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return slices.Contains(removed, v.Name) })
		delete(after.Annotations, VerifiedAnnotationPrefix+nu)
		it := "it"
		if len(removed) > 1 {
			it = "them"
		}
		p.Notes = append(p.Notes, Advise(CleanManagedFieldsStep(crd.Name), "%s gone; managedFields entries naming %s break server-side apply: promote cleans them on the cluster; by hand", isAre(removed), it))
	}
	return nil
}

func manifestVersion(crd *apiextensionsv1.CustomResourceDefinition, name string, manifest *apiextensionsv1.CustomResourceDefinition) (apiextensionsv1.CustomResourceDefinitionVersion, error) {
	if manifest == nil {
		// Most often a typo; else a version to introduce, whose schema is in a manifest.
		unknown := unknownVersion(crd, name)
		return apiextensionsv1.CustomResourceDefinitionVersion{}, &Refusal{Reason: unknown.Error(), Instead: IntroduceStep(crd.Name, name, "CRD_MANIFEST"), Err: unknown}
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

// takeConversion keeps the live conversion settings unless asked to take the manifest's, never
// drops a live caBundle the manifest lacks, and says what differs.
func takeConversion(crd, after *apiextensionsv1.CustomResourceDefinition, version string, opts PromoteOptions) []Advice {
	live, file := ConversionSummary(crd.Spec.Conversion), ConversionSummary(opts.Manifest.Spec.Conversion)
	if live == file || opts.Manifest.Spec.Conversion == nil {
		return nil
	}
	if !opts.ConversionFromFile {
		take := IntroduceStep(crd.Name, version, "CRD_MANIFEST")
		take.ConversionFromFile = true
		return []Advice{Advise(take, "the manifest's conversion (%s) differs from the live one (%s), which is kept: a step changes only what it names; to take the manifest's", file, live)}
	}
	conv := opts.Manifest.Spec.Conversion.DeepCopy()
	after.Spec.Conversion = conv
	var notes []Advice
	if lc := crd.Spec.Conversion; lc != nil && lc.Webhook != nil && lc.Webhook.ClientConfig != nil && len(lc.Webhook.ClientConfig.CABundle) > 0 &&
		conv.Webhook != nil && conv.Webhook.ClientConfig != nil && len(conv.Webhook.ClientConfig.CABundle) == 0 {
		conv.Webhook.ClientConfig.CABundle = slices.Clone(lc.Webhook.ClientConfig.CABundle)
		notes = append(notes, Advise(nil, "the live caBundle is kept: the manifest has none (one a cainjector keeps is the cluster's), and without it the API server could not call the converter"))
	}
	return notes
}

func setVerification(crd *apiextensionsv1.CustomResourceDefinition, v string, rec Verification) {
	if crd.Annotations == nil {
		crd.Annotations = map[string]string{}
	}
	k, val := VerifiedAnnotation(rec, v)
	crd.Annotations[k] = val
}

func promoteStep(crd, name string, to Stage) *Step {
	if to == StageIntroduced {
		return IntroduceStep(crd, name, "CRD_MANIFEST")
	}
	return PromoteToStep(crd, name, to)
}

// isAre names versions as the subject of a sentence: "v1 is", "v1, v2 are".
func isAre(versions []string) string {
	if len(versions) == 1 {
		return versions[0] + " is"
	}
	return strings.Join(versions, ", ") + " are"
}

func stageList() string {
	s := make([]string, len(Stages))
	for i, st := range Stages {
		s[i] = string(st)
	}
	return fmt.Sprint(s)
}

// storedPrecondition is what a file cannot show: old gone from a cluster's storedVersions before does.
func storedPrecondition(crd, old, does string) Advice {
	return Advise(MigrateStep(crd), "precondition: on every cluster this manifest is applied to, %s must be gone from status.storedVersions before the manifest, which %s %s, is applied there; run there", old, does, old)
}
