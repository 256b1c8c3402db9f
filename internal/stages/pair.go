package stages

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// StageAbsent is where a pair stands before its new version is introduced.
const StageAbsent Stage = "absent"

// Refusal is a transition the model does not allow, with why and what to run instead.
type Refusal struct {
	Reason string
	// Instead is nil when no command of the plugin gets any further.
	Instead *Step
	// Err, when set, is the typed error the reason says.
	Err error
}

func (r *Refusal) Error() string { return r.Reason }
func (r *Refusal) Unwrap() error { return r.Err }

// UnknownVersionError names a version the CRD does not have.
type UnknownVersionError struct {
	CRD     string
	Version string
	// Has is the CRD's versions, in spec order.
	Has []string
}

func (e *UnknownVersionError) Error() string {
	return fmt.Sprintf("%s has no version %s; it has %s", e.CRD, e.Version, strings.Join(e.Has, ", "))
}

func unknownVersion(crd *apiextensionsv1.CustomResourceDefinition, v string) *UnknownVersionError {
	e := &UnknownVersionError{CRD: crd.Name, Version: v}
	for _, ver := range crd.Spec.Versions {
		e.Has = append(e.Has, ver.Name)
	}
	return e
}

func refuse(instead *Step, format string, args ...any) *Refusal {
	return &Refusal{Reason: fmt.Sprintf(format, args...), Instead: instead}
}

// PairStage infers the pair name moves and its stage: a version absent from spec.versions is to be
// introduced, one newer than storage is introduced or bridge, storage moves its older versions.
func PairStage(crd *apiextensionsv1.CustomResourceDefinition, name string) (Pair, Stage, error) {
	storage, err := singleStorage(crd)
	if err != nil {
		return Pair{}, "", err
	}
	v := SpecVersion(crd, name)
	switch {
	case v == nil && len(validation.IsDNS1035Label(name)) > 0:
		// A typo, not a version to introduce: the API server takes no such name.
		for _, ver := range crd.Spec.Versions {
			if strings.EqualFold(ver.Name, name) {
				return Pair{}, "", refuse(nil, "%s has no version %q; did you mean %s? (version names are lowercase)", crd.Name, name, ver.Name)
			}
		}
		return Pair{}, "", refuse(nil, "%q is not a version name: lowercase letters, digits and '-', starting with a letter (%s has %s)", name, crd.Name, strings.Join(unknownVersion(crd, name).Has, ", "))
	case v == nil:
		return Pair{Old: storage, New: name}, StageAbsent, nil
	case name == storage:
		older := olderVersions(crd, name)
		if len(older) == 0 {
			if len(crd.Spec.Versions) == 1 {
				return Pair{}, "", refuse(IntroduceStep(crd.Name, "NEW_VERSION", "CRD_MANIFEST"), "%s is the only version of %s: introduce a newer one", name, crd.Name)
			}
			if heir := takesOver(crd, name); heir != "" {
				return Pair{}, "", refuse(PromoteStep(crd.Name, heir),
					"%s is the storage version and every other version is newer: promote the newer one", name)
			}
			return Pair{}, "", refuse(nil, "%s is the storage version, no version is older and none takes over from it: %s", name, noWayForward(crd))
		}
		return Pair{Old: older[0].Name, New: name}, olderStage(older), nil
	case !v.Served:
		return Pair{}, "", refuse(nil, "%s is not served: only a served version can take over from %s", name, storage)
	case v.Deprecated && retiring(crd):
		return Pair{}, "", refuse(nil, "%s is deprecated, so no version takes over from %s: %s", name, storage, noWayForward(crd))
	case v.Deprecated:
		return Pair{}, "", refuse(nil, "%s is deprecated: only a version that is not deprecated can take over from %s", name, storage)
	case !Newer(name, storage):
		return Pair{}, "", refuse(PromoteStep(crd.Name, storage),
			"%s is older than storage version %s: promote moves a newer version forward", name, storage)
	case isBridged(crd, name, storage):
		return Pair{Old: storage, New: name}, StageBridge, nil
	default:
		return Pair{Old: storage, New: name}, StageIntroduced, nil
	}
}

func singleStorage(crd *apiextensionsv1.CustomResourceDefinition) (string, error) {
	var storage []string
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storage = append(storage, v.Name)
		}
	}
	if len(storage) != 1 {
		return "", refuse(nil, "%s has %d storage versions (%s), exactly one is allowed: fix the CRD first", crd.Name, len(storage), strings.Join(storage, ", "))
	}
	return storage[0], nil
}

// olderVersions are the versions older than name, newest first. Once name is storage they
// retire together, so none is left behind at an earlier stage.
func olderVersions(crd *apiextensionsv1.CustomResourceDefinition, name string) []*apiextensionsv1.CustomResourceDefinitionVersion {
	var out []*apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if Newer(name, crd.Spec.Versions[i].Name) {
			out = append(out, &crd.Spec.Versions[i])
		}
	}
	slices.SortStableFunc(out, func(a, b *apiextensionsv1.CustomResourceDefinitionVersion) int { return ByPriority(a.Name, b.Name) })
	return out
}

// olderStage is the least advanced stage of the versions older than storage.
func olderStage(older []*apiextensionsv1.CustomResourceDefinitionVersion) Stage {
	stage := StageBlocked
	for _, v := range older {
		switch {
		case v.Served && !v.Deprecated:
			return StageServed
		case v.Served:
			stage = StageDeprecated
		}
	}
	return stage
}

// storedOlder are the versions older than name that storedVersions still names.
func storedOlder(crd *apiextensionsv1.CustomResourceDefinition, name string) []string {
	var out []string
	for _, v := range olderVersions(crd, name) {
		if slices.Contains(crd.Status.StoredVersions, v.Name) {
			out = append(out, v.Name)
		}
	}
	return out
}

// newestOlder is the highest-priority version older than name.
func newestOlder(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	var best *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if Newer(name, v.Name) && (best == nil || Newer(v.Name, best.Name)) {
			best = v
		}
	}
	return best
}

// takesOver is the highest-priority version that can take over from storage: newer, served, not
// deprecated; "" when none can.
func takesOver(crd *apiextensionsv1.CustomResourceDefinition, storage string) string {
	best := ""
	for _, v := range crd.Spec.Versions {
		if v.Served && !v.Deprecated && Newer(v.Name, storage) && (best == "" || Newer(v.Name, best)) {
			best = v.Name
		}
	}
	return best
}

// retiring says whether every served version is deprecated, storage included: the kind has no
// version left to move to, so no pair of it moves forward.
func retiring(crd *apiextensionsv1.CustomResourceDefinition) bool {
	storage := SpecVersion(crd, StorageVersion(crd))
	if storage == nil || !storage.Deprecated {
		return false
	}
	for _, v := range crd.Spec.Versions {
		if v.Served && !v.Deprecated {
			return false
		}
	}
	return true
}

// deprecatedNewer are the served, deprecated versions newer than storage, newest first. None takes
// over from storage, and stopping serving one while the older storage version stays served would
// turn kubectl's default (the newest served version) back to an older one: no step of the plugin.
func deprecatedNewer(crd *apiextensionsv1.CustomResourceDefinition, storage string) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served && v.Deprecated && Newer(v.Name, storage) {
			out = append(out, v.Name)
		}
	}
	SortByPriority(out)
	return out
}

// servedVersions are the served versions, newest first.
func servedVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out = append(out, v.Name)
		}
	}
	SortByPriority(out)
	return out
}

// noWayForward says why a CRD whose storage version nothing takes over from has no forward step:
// the kind is retiring, or a newer version is deprecated while the older storage one is not.
func noWayForward(crd *apiextensionsv1.CustomResourceDefinition) string {
	storage := StorageVersion(crd)
	if retiring(crd) {
		return retiringWords(crd.Spec.Names.Kind, servedVersions(crd), storage)
	}
	if newer := deprecatedNewer(crd, storage); len(newer) > 0 {
		return directionWords(newer, storage)
	}
	return fmt.Sprintf("no version newer than storage version %s is served and not deprecated: none can take over from it", storage)
}
