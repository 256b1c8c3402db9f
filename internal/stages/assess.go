package stages

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Assess infers every version's stage, the CRD's problems and its next step from the CRD alone.
func Assess(crd *apiextensionsv1.CustomResourceDefinition) Assessment {
	return AssessWith(crd, nil)
}

// AssessWith is Assess knowing the objects' managedFields entries at unserved versions (nil: none).
func AssessWith(crd *apiextensionsv1.CustomResourceDefinition, stale *StaleManagedFields) Assessment {
	if stale != nil && stale.Objects == 0 {
		stale = nil
	}
	a := assessing{Assessment: Assessment{
		Name:               crd.Name,
		Group:              crd.Spec.Group,
		Kind:               crd.Spec.Names.Kind,
		Resource:           crd.Spec.Names.Plural,
		Scope:              string(crd.Spec.Scope),
		Conversion:         conversionStrategy(crd),
		StorageVersion:     StorageVersion(crd),
		StoredVersions:     append([]string{}, crd.Status.StoredVersions...),
		Migrating:          StorageMigrating(crd),
		MigratingCondition: storageMigratingCondition(crd),
		Refused:            RefusedFor(crd),
		StaleManagedFields: stale,
		NotServed:          NotServed(crd),
		Window:             OpenWindow(crd),
		Problems:           []Problem{},
	},
		namesRefused: NamesRefused(crd),
		retiring:     retiring(crd),
		served:       servedVersions(crd),
	}
	if takesOver(crd, a.StorageVersion) == "" {
		a.newerDeprecated = deprecatedNewer(crd, a.StorageVersion)
	}
	for _, v := range crd.Spec.Versions {
		ver := Version{
			Name:       v.Name,
			Served:     v.Served,
			Storage:    v.Storage,
			Deprecated: v.Deprecated,
			Stored:     slices.Contains(crd.Status.StoredVersions, v.Name),
			InSpec:     true,
		}
		if v.Deprecated {
			ver.DeprecationWarning = DeprecationWarning(crd, v.Name)
		}
		ver.Stage = inferStage(crd, v, a.StorageVersion)
		a.Versions = append(a.Versions, ver)
	}
	for _, name := range crd.Status.StoredVersions {
		if SpecVersion(crd, name) == nil {
			a.Versions = append(a.Versions, Version{Name: name, Stored: true, Stage: StageMissing})
		}
	}
	slices.SortStableFunc(a.Versions, func(x, y Version) int { return ByPriority(x.Name, y.Name) })
	a.Problems = problems(a)
	a.GitOps = GitOpsOwner(crd)
	a.Next = nextStep(a)
	if s := a.Next.Step; a.GitOps != nil && s != nil && s.Op == OpPromote && s.To.EditsVersions() {
		a.Next.Step = s.InFile("CRD_MANIFEST")
		a.Next.Reason += fmt.Sprintf("; in the manifest %s syncs, as a live edit would be reverted", a.GitOps.Tool)
	}
	return a.Assessment
}

// assessing is an Assessment being made, with what its problems and next step are judged from.
type assessing struct {
	Assessment
	// namesRefused: the API server refused the names, which only a manifest edit ends.
	namesRefused bool
	// retiring: every served version is deprecated, storage included; newerDeprecated: served,
	// deprecated versions newer than storage while none takes over from it, left served by the plugin.
	retiring        bool
	newerDeprecated []string
	served          []string
}

func inferStage(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion, storage string) Stage {
	switch {
	case v.Storage:
		return StageStorage
	case !v.Served:
		return StageBlocked
	case v.Deprecated:
		return StageDeprecated
	case Newer(v.Name, storage):
		if isBridged(crd, v.Name, storage) {
			return StageBridge
		}
		return StageIntroduced
	default:
		return StageServed
	}
}

// MigrationPending reports a CRD whose storedVersions names a version besides storage.
func MigrationPending(crd *apiextensionsv1.CustomResourceDefinition) bool {
	storage := StorageVersion(crd)
	for _, v := range crd.Status.StoredVersions {
		if v != storage {
			return true
		}
	}
	return false
}

func problems(a assessing) []Problem {
	out := []Problem{}
	if storage := storageVersions(a.Assessment); len(storage) != 1 {
		out = append(out, Problem{Severity: SeverityError, Version: "", Message: badStorage(storage)})
	}
	switch {
	case a.namesRefused:
		out = append(out, Problem{Severity: SeverityError, Version: "", Message: "the API server serves none of its objects (" + a.NotServed + "): every client of it fails"})
	case a.NotServed != "":
		out = append(out, Problem{Severity: SeverityWarning, Version: "", Message: "the API server has not established it yet (" + a.NotServed + "): none of its objects is served until it is"})
	}
	pending := a.Pending()
	for _, v := range a.Versions {
		switch {
		case !v.InSpec:
			out = append(out, Problem{Severity: SeverityError, Version: v.Name, Message: fmt.Sprintf(
				"status.storedVersions names %s, which is missing from spec.versions: every update of this CRD fails until storedVersions is pruned", v.Name)})
		case v.Stage == StageServed:
			out = append(out, Problem{Severity: SeverityWarning, Version: v.Name, Message: fmt.Sprintf(
				"%s is served and older than storage version %s but not deprecated: clients get no warning", v.Name, a.StorageVersion)})
		case v.Storage && v.Deprecated && a.retiring:
			out = append(out, Problem{Severity: SeverityWarning, Version: v.Name, Message: fmt.Sprintf(
				"storage version %s is marked deprecated, as is every served version (%s): %s is retiring; clients should move off it before its owner removes the CRD and every object with it",
				v.Name, strings.Join(a.served, ", "), a.Kind)})
		case v.Storage && v.Deprecated:
			out = append(out, Problem{Severity: SeverityWarning, Version: v.Name, Message: fmt.Sprintf(
				"storage version %s is marked deprecated", v.Name)})
		case !a.retiring && slices.Contains(a.newerDeprecated, v.Name):
			out = append(out, Problem{Severity: SeverityWarning, Version: v.Name, Message: fmt.Sprintf(
				"%s is deprecated though newer than storage version %s, which is not: kubectl reads %s by default (the newest served version) and no version takes over from %s",
				v.Name, a.StorageVersion, a.served[0], a.StorageVersion)})
		}
	}
	if len(pending) > 0 {
		out = append(out, Problem{Severity: SeverityWarning, Version: "", Message: fmt.Sprintf(
			"migration pending: objects may still be stored at %s (status.storedVersions: %s)",
			strings.Join(pending, ", "), strings.Join(a.StoredVersions, ", "))})
	}
	if a.Migrating {
		out = append(out, Problem{Severity: SeverityWarning, Version: "", Message: "the cluster's storage version migrator is at work (condition StorageMigrating=True)"})
	}
	if a.StaleManagedFields != nil {
		out = append(out, staleProblem(a.StaleManagedFields))
	}
	return out
}

// storageVersions are the versions marked storage: exactly one in any CRD the API server took.
func storageVersions(a Assessment) []string {
	var out []string
	for _, v := range a.Versions {
		if v.Storage {
			out = append(out, v.Name)
		}
	}
	return out
}

func badStorage(storage []string) string {
	if len(storage) == 0 {
		return "no version has storage: true; exactly one must (the API server refuses this CRD)"
	}
	return fmt.Sprintf("%d versions have storage: true (%s); exactly one must (the API server refuses this CRD)", len(storage), strings.Join(storage, ", "))
}

// nextStep picks the one step that unblocks the most: repair before migration, migration (with
// the stale managedFields cleanup) before promotion, newer versions before older. A version is
// stopped serving or removed only below storage, so no newer version goes while an older one stays.
func nextStep(a assessing) Next {
	crd := a.Name
	migrate := MigrateStep(crd)
	migrate.CleanManagedFields = a.StaleManagedFields != nil
	byStage := map[Stage][]string{}
	pending := a.Pending()
	for _, v := range a.Versions {
		byStage[v.Stage] = append(byStage[v.Stage], v.Name)
	}
	below := func(stage Stage) []string {
		return slices.DeleteFunc(slices.Clone(byStage[stage]), func(v string) bool { return !Newer(a.StorageVersion, v) })
	}
	switch {
	case len(storageVersions(a.Assessment)) != 1:
		return Next{Action: ActionFix, Reason: "edit the manifest: " + badStorage(storageVersions(a.Assessment))}
	case a.namesRefused:
		return Next{Action: ActionFix, Reason: "edit the manifest so the API server establishes the CRD (" + a.NotServed + "; names another CRD holds must change), then apply it: no step can be taken while its objects are not served"}
	case a.NotServed != "":
		return Next{Action: ActionWait, Reason: fmt.Sprintf("the API server has not established it yet (%s); check again once it is (kubectl wait --for=condition=Established crd/%s)", a.NotServed, crd)}
	case a.Window != nil:
		// Before anything else: every other step is planned from the CRD as the run left it.
		return Next{Action: ActionRun, Step: a.Window.Step(), Reason: WindowReason(a.Window)}
	case a.Migrating:
		return Next{Action: ActionWait, Reason: "the cluster's storage version migrator is migrating this resource; check again when StorageMigrating is False"}
	case len(byStage[StageMissing]) > 0:
		return Next{Action: ActionRun, Step: migrate, Reason: fmt.Sprintf("re-store every object at %s and prune %s from storedVersions", a.StorageVersion, strings.Join(byStage[StageMissing], ", "))}
	case len(pending) > 0 && a.Refused != nil:
		// The same migrate would leave the same objects: change them, or drop those fields on purpose.
		r := a.Refused
		return Next{Action: ActionFix, Step: &Step{Op: OpMigrate, CRD: crd, AcceptLoss: true},
			Reason: fmt.Sprintf("the last migrate left %s stored at %s: re-storing them at %s would lose %s (%s); edit those fields out of them (or into fields %s keeps) and migrate again, which names each object and field as it checks it; or re-store them unchecked, losing whatever they hold that %s lacks",
				Objects(r.Objects), strings.Join(pending, ", "), r.Storage, strings.Join(r.Fields, ", "), firstOf(r.First, r.Objects), r.Storage, r.Storage)}
	case len(pending) > 0:
		return Next{Action: ActionRun, Step: migrate, Reason: fmt.Sprintf("objects may still be stored at %s", strings.Join(pending, ", "))}
	case a.StaleManagedFields != nil:
		return staleNext(crd, a.StaleManagedFields)
	case a.retiring:
		return Next{Action: ActionNone, Reason: retiringWords(a.Kind, a.served, a.StorageVersion)}
	case len(byStage[StageIntroduced]) > 0:
		v := byStage[StageIntroduced][0]
		return Next{Action: ActionReady, Step: PromoteToStep(crd, v, StageBridge), Reason: fmt.Sprintf("checks that every object round-trips %s→%s→%s, then records bridge", v, a.StorageVersion, v)}
	case len(byStage[StageBridge]) > 0:
		v := byStage[StageBridge][0]
		return Next{Action: ActionReady, Step: PromoteToStep(crd, v, StageDeprecated), Reason: fmt.Sprintf("make %s the storage version and deprecate %s", v, a.StorageVersion)}
	case len(byStage[StageServed]) > 0:
		return Next{Action: ActionReady, Step: PromoteToStep(crd, a.StorageVersion, StageDeprecated), Reason: fmt.Sprintf("deprecate %s so clients are warned", strings.Join(byStage[StageServed], ", "))}
	case len(below(StageDeprecated)) > 0:
		return Next{Action: ActionReady, Step: PromoteToStep(crd, a.StorageVersion, StageBlocked), Reason: fmt.Sprintf("stop serving %s", strings.Join(below(StageDeprecated), ", "))}
	case len(below(StageBlocked)) > 0:
		return Next{Action: ActionReady, Step: PromoteToStep(crd, a.StorageVersion, StageRemoved), Reason: fmt.Sprintf("remove %s from spec.versions", strings.Join(below(StageBlocked), ", "))}
	case len(a.newerDeprecated) > 0:
		return Next{Action: ActionNone, Reason: directionWords(a.newerDeprecated, a.StorageVersion)}
	case len(a.Versions) == 1:
		return Next{Action: ActionNone, Reason: "one version, nothing to do"}
	default:
		return Next{Action: ActionNone, Reason: "versions are consistent"}
	}
}

// StorageVersion is the version marked storage, or "" (a manifest may have none).
func StorageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// DeprecationWarning is the warning clients get for deprecated v: the CRD's or the server's default.
func DeprecationWarning(crd *apiextensionsv1.CustomResourceDefinition, v string) string {
	if sv := SpecVersion(crd, v); sv != nil && sv.DeprecationWarning != nil {
		return *sv.DeprecationWarning
	}
	msg := fmt.Sprintf("%s/%s %s is deprecated", crd.Spec.Group, v, crd.Spec.Names.Kind)
	var replacement string
	for _, other := range crd.Spec.Versions {
		if other.Served && !other.Deprecated && Newer(other.Name, v) && (replacement == "" || Newer(other.Name, replacement)) {
			replacement = other.Name
		}
	}
	if replacement != "" {
		msg += fmt.Sprintf("; use %s/%s %s", crd.Spec.Group, replacement, crd.Spec.Names.Kind)
	}
	return msg
}

// SpecVersion is the version of that name in spec.versions, or nil.
func SpecVersion(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// ConvertsByWebhook says whether a webhook converts the versions; else they differ only in apiVersion.
func ConvertsByWebhook(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return conversionStrategy(crd) == string(apiextensionsv1.WebhookConverter)
}

func conversionStrategy(crd *apiextensionsv1.CustomResourceDefinition) string {
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy == "" {
		return string(apiextensionsv1.NoneConverter)
	}
	return string(crd.Spec.Conversion.Strategy)
}

// NotServed says, from the CRD's conditions, why the API server serves none of its objects (not
// Established, often NamesAccepted=False); "" if established or without conditions (a file).
func NotServed(crd *apiextensionsv1.CustomResourceDefinition) string {
	var established, names *apiextensionsv1.CustomResourceDefinitionCondition
	for i, c := range crd.Status.Conditions {
		switch c.Type {
		case apiextensionsv1.Established:
			established = &crd.Status.Conditions[i]
		case apiextensionsv1.NamesAccepted:
			names = &crd.Status.Conditions[i]
		}
	}
	if established == nil || established.Status == apiextensionsv1.ConditionTrue {
		return ""
	}
	c := established
	if names != nil && names.Status != apiextensionsv1.ConditionTrue {
		c = names
	}
	why := fmt.Sprintf("%s=%s", c.Type, c.Status)
	if c.Message != "" {
		why += ": " + c.Message
	} else if c.Reason != "" {
		why += ": " + c.Reason
	}
	return why
}

// NamesRefused says whether the API server refused the CRD's names (one another CRD holds): the
// one reason a CRD stays unserved that only an edit of its manifest ends.
func NamesRefused(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.NamesAccepted {
			return c.Status == apiextensionsv1.ConditionFalse
		}
	}
	return false
}

func storageMigratingCondition(crd *apiextensionsv1.CustomResourceDefinition) *Condition {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.StorageMigrating {
			return &Condition{Status: string(c.Status), Reason: c.Reason, Message: c.Message}
		}
	}
	return nil
}

// StorageMigrating reports the condition the cluster's storage version migrator sets while at work.
func StorageMigrating(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.StorageMigrating && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// firstOf names the first objects of n: "ns/a, ns/b and 3 more".
func firstOf(first []string, n int64) string {
	s := strings.Join(first, ", ")
	if more := n - int64(len(first)); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// ListVersion is the version for reads that need none in particular: served, not deprecated where it
// can be (the deprecated-API metric never forgets a read), storage first (no webhook), else the
// newest; "" when none is served.
func ListVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	storage := StorageVersion(crd)
	best := map[bool]string{}
	for _, v := range crd.Spec.Versions {
		switch b := best[v.Deprecated]; {
		case !v.Served:
		case v.Name == storage, b != storage && (b == "" || Newer(v.Name, b)):
			best[v.Deprecated] = v.Name
		}
	}
	return cmp.Or(best[false], best[true])
}
