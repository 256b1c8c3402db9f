package check

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// storedVersionsMessage is the API server's rejection of a CRD dropping a stored version.
func storedVersionsMessage(i int, v string) string {
	return fmt.Sprintf("status.storedVersions[%d]: Invalid value: %q: missing from spec.versions; %s was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in %s and removes %s from status.storedVersions", i, v, v, v, v)
}

// CheckUpgrade compares the CRD as it is (old; nil when it does not exist yet) with the
// manifest replacing it (new). stored is the live status.storedVersions; nil without a
// cluster, where every version old declares storage is taken as stored.
func CheckUpgrade(old, new *apiextensionsv1.CustomResourceDefinition, stored []string) []results.Finding {
	if old == nil {
		// Nothing to compare with, but client-side apply cannot create it either.
		return lastAppliedTooLong(nil, new)
	}
	offline := stored == nil
	if offline {
		stored = slices.Clone(old.Status.StoredVersions)
		if s := stages.StorageVersion(old); s != "" && !slices.Contains(stored, s) {
			stored = append(stored, s)
		}
	}
	var out []results.Finding
	out = append(out, rejected(old, new, stored)...)
	out = append(out, lastAppliedTooLong(old, new)...)
	if offline {
		out = append(out, removedMaybeStored(old, new, stored)...)
	}
	out = append(out, lifecycleSkips(old, new)...)
	out = append(out, deprecations(old, new)...)
	out = append(out, schemaBreaks(old, new)...)
	return out
}

func rejected(old, new *apiextensionsv1.CustomResourceDefinition, stored []string) []results.Finding {
	var out []results.Finding
	if old.Spec.Scope != new.Spec.Scope {
		out = append(out, results.Finding{Severity: lifecycle.SeverityError, Kind: results.FindingRejected, CRD: new.Name, Rule: "scopeChanged",
			Message: fmt.Sprintf("spec.scope: Invalid value: %q: field is immutable (it is %s)", new.Spec.Scope, old.Spec.Scope),
			Fix:     []lifecycle.Advice{stages.Advise(nil, "keep spec.scope as it is; a resource cannot change scope (a new CRD under another name can)")}})
	}
	for i, v := range stored {
		if stages.SpecVersion(new, v) != nil {
			continue
		}
		f := results.Finding{Severity: lifecycle.SeverityError, Kind: results.FindingRejected, CRD: new.Name, Version: v, Rule: "storedVersionRemoved",
			Message: "the API server refuses the update: " + storedVersionsMessage(i, v)}
		// The way is the plan toward the release, from the CRD as it is with these storedVersions.
		live := old.DeepCopy()
		live.Status.StoredVersions = stored
		f.Fix = planFix(live, new, nil)
		out = append(out, f)
	}
	return out
}

// removedMaybeStored flags, without a cluster, each version new removes that old did not store
// at: a cluster that ran an older release may still list it in storedVersions, and its API
// server then refuses the new CRD. Only a cluster's storedVersions can tell.
func removedMaybeStored(old, new *apiextensionsv1.CustomResourceDefinition, stored []string) []results.Finding {
	var out []results.Finding
	for _, o := range old.Spec.Versions {
		if stages.SpecVersion(new, o.Name) != nil || slices.Contains(stored, o.Name) {
			continue
		}
		out = append(out, results.Finding{Severity: lifecycle.SeverityWarning, Kind: results.FindingRejected, CRD: new.Name, Version: o.Name, Rule: "removedVersionMayBeStored",
			Message: fmt.Sprintf("%s is removed from spec.versions: on a cluster whose status.storedVersions still names it (objects were stored at it under an older release, and no migration pruned it), the API server refuses this CRD", o.Name),
			Fix: []lifecycle.Advice{
				stages.Advise(stages.MigrateStep(new.Name), "on every cluster, before applying, re-store every object at %s and prune %s from storedVersions (nothing happens where storedVersions no longer names it)", stages.StorageVersion(old), o.Name),
				stages.Advise(stages.CheckFileStep("NEW"), "or check against each cluster, which reads its storedVersions")}})
	}
	return out
}

// lifecycleSkips finds versions that move more than one stage in one
// release: each step exists so clients and stored objects can follow.
func lifecycleSkips(old, new *apiextensionsv1.CustomResourceDefinition) []results.Finding {
	var out []results.Finding
	add := func(v, rule, msg string, fix ...lifecycle.Advice) {
		out = append(out, results.Finding{Severity: lifecycle.SeverityError, Kind: results.FindingLifecycle, CRD: new.Name, Version: v, Rule: rule, Message: msg, Fix: fix})
	}
	oldStorage, newStorage := stages.StorageVersion(old), stages.StorageVersion(new)
	if newStorage != oldStorage && newStorage != "" {
		if o := stages.SpecVersion(old, newStorage); o == nil || !o.Served {
			add(newStorage, "storageWithoutBridge",
				fmt.Sprintf("the storage version switches from %s to %s, which the current CRD does not serve: no release served both, so no round trip was checked and clients of %s had no time to move", oldStorage, newStorage, oldStorage),
				stages.Advise(stages.IntroduceStep(new.Name, newStorage, "NEW_MANIFEST"), "release 1: serve %s beside %s, storage unchanged", newStorage, oldStorage),
				stages.Advise(stages.PromoteToStep(new.Name, newStorage, lifecycle.StageBridge), "then check the round trip and record bridge"),
				stages.Advise(stages.PromoteToStep(new.Name, newStorage, lifecycle.StageDeprecated), "release 2: make %s the storage version and deprecate %s", newStorage, oldStorage))
		}
		if n := stages.SpecVersion(new, oldStorage); n != nil && !n.Served {
			add(oldStorage, "storageSwitchAndUnserve",
				fmt.Sprintf("%s stops being the storage version and stops being served in the same release: two steps at once", oldStorage),
				stages.Advise(nil, "release 1: switch storage to %s and deprecate %s", newStorage, oldStorage),
				stages.Advise(stages.PromoteToStep(new.Name, newStorage, lifecycle.StageBlocked), "release 2: stop serving %s", oldStorage))
		}
	}
	for _, o := range old.Spec.Versions {
		n := stages.SpecVersion(new, o.Name)
		switch {
		case n == nil && o.Served && o.Deprecated:
			add(o.Name, "removedWhileServed",
				fmt.Sprintf("%s is removed while the current CRD still serves it: its clients get 404 with no release in between", o.Name),
				stages.Advise(stages.PromoteToStep(new.Name, newStorage, lifecycle.StageBlocked), "release 1: stop serving %s (served: false)", o.Name),
				stages.Advise(stages.MigrateStep(new.Name), "before removing it, prune it from storedVersions"),
				stages.Advise(nil, "release 2: remove it"))
		case n == nil && o.Served:
			add(o.Name, "removedWhileServed",
				fmt.Sprintf("%s is removed while the current CRD still serves it, never deprecated: its clients get 404 with no warning", o.Name),
				stages.Advise(nil, "release 1: deprecate %s, then release 2: stop serving it (served: false)", o.Name),
				stages.Advise(stages.MigrateStep(new.Name), "before removing it, prune it from storedVersions"),
				stages.Advise(nil, "release 3: remove it"))
		case n != nil && o.Served && !n.Served && !o.Deprecated:
			add(o.Name, "unservedWithoutDeprecation",
				fmt.Sprintf("%s stops being served without ever having been deprecated: its clients were never warned", o.Name),
				stages.Advise(nil, "release 1: deprecate %s (deprecated: true, a deprecationWarning naming its replacement)", o.Name),
				stages.Advise(nil, "release 2: stop serving %s", o.Name))
		}
	}
	return out
}

// deprecations lists, for release notes, every version the upgrade deprecates, unserves or removes.
func deprecations(old, new *apiextensionsv1.CustomResourceDefinition) []results.Finding {
	var out []results.Finding
	add := func(v, rule, msg string) {
		out = append(out, results.Finding{Severity: lifecycle.SeverityWarning, Kind: results.FindingDeprecation, CRD: new.Name, Version: v, Rule: rule, Message: msg})
	}
	for _, o := range old.Spec.Versions {
		n := stages.SpecVersion(new, o.Name)
		replacement := replacementFor(new, o.Name)
		switch {
		case n == nil && !o.Served:
			// Its clients lost it a release ago: a release-notes line, nothing that may fail.
			add(o.Name, "versionRemoved", fmt.Sprintf("%s/%s %s, no longer served, is removed", new.Spec.Group, o.Name, new.Spec.Names.Kind))
			out[len(out)-1].Severity = lifecycle.SeverityNote
		case n == nil:
			add(o.Name, "versionRemoved", fmt.Sprintf("%s/%s %s is removed; use %s/%s", new.Spec.Group, o.Name, new.Spec.Names.Kind, new.Spec.Group, replacement))
		case o.Served && !n.Served:
			add(o.Name, "versionUnserved", fmt.Sprintf("%s/%s %s is no longer served; use %s/%s", new.Spec.Group, o.Name, new.Spec.Names.Kind, new.Spec.Group, replacement))
		case !o.Deprecated && n.Deprecated:
			add(o.Name, "versionDeprecated", fmt.Sprintf("%s/%s %s is deprecated; use %s/%s", new.Spec.Group, o.Name, new.Spec.Names.Kind, new.Spec.Group, replacement))
		}
	}
	return out
}

// replacementFor is where v's clients move: the newest served undeprecated version, else storage.
func replacementFor(crd *apiextensionsv1.CustomResourceDefinition, v string) string {
	best := ""
	for _, c := range crd.Spec.Versions {
		if c.Name != v && c.Served && !c.Deprecated && (best == "" || stages.Newer(c.Name, best)) {
			best = c.Name
		}
	}
	if best == "" {
		return stages.StorageVersion(crd)
	}
	return best
}

// schemaBreaks compares every version's schema served before and after, and, on a storage
// switch, whether re-storing objects at the new version keeps what the old held.
func schemaBreaks(old, new *apiextensionsv1.CustomResourceDefinition) []results.Finding {
	var out []results.Finding
	for _, o := range old.Spec.Versions {
		n := stages.SpecVersion(new, o.Name)
		if n == nil || !o.Served || !n.Served {
			continue
		}
		for _, c := range schemacompat.SchemaChanges(schemacompat.VersionSchema(&o), schemacompat.VersionSchema(n)) {
			sev := lifecycle.SeverityWarning
			if c.Breaking {
				sev = lifecycle.SeverityError
			}
			out = append(out, results.Finding{Severity: sev, Kind: results.FindingSchema, CRD: new.Name, Version: o.Name, Rule: c.Rule, Path: c.Path, Message: c.Message})
		}
	}
	oldStorage, newStorage := stages.StorageVersion(old), stages.StorageVersion(new)
	if oldStorage == newStorage || stages.SpecVersion(new, newStorage) == nil || stages.SpecVersion(old, oldStorage) == nil {
		return out
	}
	// Old's storage schema as it is today: the objects stored now were written under it.
	pair := new.DeepCopy()
	pair.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{*stages.SpecVersion(old, oldStorage).DeepCopy(), *stages.SpecVersion(new, newStorage).DeepCopy()}
	if ok, why := schemacompat.SchemaProof(pair, oldStorage, newStorage); !ok {
		sev := lifecycle.SeverityError
		if stages.ConvertsByWebhook(new) {
			sev = lifecycle.SeverityWarning // not a finding about the schemas: only the webhook knows
		}
		out = append(out, results.Finding{Severity: sev, Kind: results.FindingSchema, CRD: new.Name, Version: oldStorage, Rule: "storageSwitchMayLoseData",
			Message: fmt.Sprintf("re-storing objects stored at %s at %s (what migrate does after this upgrade) is not proven lossless: %s", oldStorage, newStorage, why),
			Fix: []lifecycle.Advice{stages.Advise(stages.MigrateStep(new.Name), "after applying, re-store the objects, each checked %s→%s→%s first, leaving as it is every object that would lose data", oldStorage, newStorage, oldStorage),
				stages.Advise(nil, "or carry the field into the new version's schema (or through the conversion webhook)")}})
	}
	return out
}

// Unserved lists the versions old serves and new does not (unserved or removed).
func Unserved(old, new *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, o := range old.Spec.Versions {
		if n := stages.SpecVersion(new, o.Name); o.Served && (n == nil || !n.Served) {
			out = append(out, o.Name)
		}
	}
	return out
}

// CheckFiles compares new manifests with those they replace, by CRD name; an old CRD the new
// ones lack is dropped (see Dropped).
func CheckFiles(old, new []*apiextensionsv1.CustomResourceDefinition) []results.Finding {
	byName := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, o := range old {
		byName[o.Name] = o
	}
	inNew := map[string]bool{}
	var out []results.Finding
	for _, n := range new {
		inNew[n.Name] = true
		out = append(out, CheckUpgrade(byName[n.Name], n, nil)...)
	}
	for _, o := range old {
		if inNew[o.Name] {
			continue
		}
		inNew[o.Name] = true // reported once, however many documents name it
		out = append(out, Dropped(o, RenamedTo(o, new), nil))
	}
	return out
}

// RenamedTo is the CRD of crds with old's kind and plural under another group, or nil.
func RenamedTo(old *apiextensionsv1.CustomResourceDefinition, crds []*apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	for _, c := range crds {
		if c.Spec.Group != old.Spec.Group && c.Spec.Names.Kind == old.Spec.Names.Kind && c.Spec.Names.Plural == old.Spec.Names.Plural {
			return c
		}
	}
	return nil
}

// DroppedLive is what a cluster shows of a dropped CRD.
type DroppedLive struct {
	// Counted: the server answered the list; Count is how many, or with AtLeast a lower bound.
	Counted bool
	Count   int64
	AtLeast bool
	// Why says why they could not be counted.
	Why string
	// SameSource is the evidence that the new manifests' source applied it too ("": none).
	SameSource string
	// SameGroup: the new manifests ship other CRDs of its group (the same project's, most often).
	SameGroup bool
	// Objects are the first few objects' names (namespace/name), from the count's list.
	Objects []string
}

// shown is where's list of the first objects, "" for none.
func (l *DroppedLive) shown() string {
	if len(l.Objects) == 0 {
		return ""
	}
	s := strings.Join(l.Objects, ", ")
	switch more := l.Count - int64(len(l.Objects)); {
	case l.AtLeast:
		s += ", ..."
	case more > 0:
		s += fmt.Sprintf(" and %d more", more)
	}
	return " (" + s + ")"
}

// Dropped is the finding for old, a CRD the old manifests or the cluster have and the new ones
// lack; to is its rename (RenamedTo; its objects do not follow) or nil, live what the cluster
// shows (nil: files). From files it is an error: a pruning apply deletes the CRD and every
// object of it. On a cluster (CRDs from many sources) it is an error only where the same source
// applied old, or the new manifests ship its group, and it has objects (or they are uncounted):
// a warning where either fails, a note where both do. A live drop names the owners its marks
// tell (droppedOwners); where none of them deletes it (Helm's resource-policy keep), it is one
// step lower.
func Dropped(old, to *apiextensionsv1.CustomResourceDefinition, live *DroppedLive) results.Finding {
	f := results.Finding{Severity: lifecycle.SeverityError, Kind: results.FindingDropped, CRD: old.Name, Rule: "crdDropped"}
	const pruning = "an apply that prunes (Argo CD or Flux with pruning, kubectl apply --prune)"
	where, all := "is in the old manifests", "every object of it"
	empty, unsure := false, false
	if live != nil {
		switch {
		case !live.Counted:
			where = fmt.Sprintf("is on the cluster (its objects could not be counted: %s)", live.Why)
		case live.Count == 0:
			where, empty = "is on the cluster with no object", true
		case live.AtLeast:
			where = "is on the cluster with objects" + live.shown()
		case live.Count == 1:
			where, all = "is on the cluster with 1 object"+live.shown(), "its 1 object"
		default:
			where, all = fmt.Sprintf("is on the cluster with %d objects%s", live.Count, live.shown()), fmt.Sprintf("all %d objects of it", live.Count)
		}
		unsure = live.SameSource == ""
		switch {
		case unsure && empty:
			f.Severity = lifecycle.SeverityNote
		case unsure && live.SameGroup && to == nil:
			// The release of its own group drops it: no mark is needed to tell whose it is.
		case unsure || empty:
			f.Severity = lifecycle.SeverityWarning
		}
		if to == nil {
			return droppedLive(f, old, live, where, all, empty)
		}
	}
	gone := fmt.Sprintf("%s deletes %s and, with it, %s; a plain kubectl apply leaves it", pruning, old.Name, all)
	if empty {
		gone = fmt.Sprintf("nothing is lost: %s deletes %s; a plain kubectl apply leaves it", pruning, old.Name)
	}
	if to == nil {
		f.Message = fmt.Sprintf("%s %s and not in the new manifests: %s", old.Name, where, gone)
		f.Fix = []lifecycle.Advice{
			stages.Advise(nil, "keep %s in the manifests while any object of it is to stay", old.Name),
			stages.Advise(nil, "to retire it: delete its objects first (kubectl delete %s --all -A, on every cluster; a controller may clean up what they manage), then drop it from the manifests", old.Name)}
		return f
	}
	f.Rule = "crdRenamed"
	newGroup := to.Spec.Group
	rename := "a group rename"
	switch {
	case unsure:
		rename = "if they replace it (nothing tells: no Helm release, Argo CD application, Flux label, chart or part-of label in common), a group rename"
	case live != nil:
		rename = fmt.Sprintf("a group rename (both from %s)", live.SameSource)
	}
	if !empty {
		rename += ", and objects do not move between groups"
	}
	f.Message = fmt.Sprintf("%s %s and not in the new manifests, which have %s, the same kind (%s, plural %s) under group %s: %s. %s beside %s",
		old.Name, where, to.Name, old.Spec.Names.Kind, old.Spec.Names.Plural, newGroup, rename, upperFirst(gone), to.Name)
	if empty {
		f.Fix = []lifecycle.Advice{
			stages.Advise(nil, "move the clients and controllers of %s to %s: once %s is deleted, requests to it fail", old.Spec.Group, newGroup, old.Name)}
		return f
	}
	version := stages.StorageVersion(to)
	if version == "" {
		version = "VERSION"
	}
	f.Fix = []lifecycle.Advice{
		stages.Advise(nil, "keep %s in the manifests beside %s until its objects are moved", old.Name, to.Name),
		stages.Advise(nil, "create each object again under %s (apiVersion: %s/%s, kind %s, the same name and namespace, without the old object's metadata.uid and resourceVersion), and move its clients and controllers to %s", newGroup, newGroup, version, to.Spec.Names.Kind, newGroup),
		stages.Advise(nil, "then, once no controller acts on them (one may clean up what a deleted object manages), delete the objects of %s (kubectl delete %s --all -A, on every cluster) and drop it from the manifests", old.Name, old.Name)}
	return f
}

// droppedLive words f for old, a live CRD the new manifests lack: whose apply deletes it,
// from its marks, and how to keep it or retire it.
func droppedLive(f results.Finding, old *apiextensionsv1.CustomResourceDefinition, live *DroppedLive, where, all string, empty bool) results.Finding {
	owners := dropOwners(old)
	lost := all
	if empty {
		lost = ""
	}
	say, deletes := ownersSay(owners, old.Name, lost)
	if !deletes {
		// Its owners leave it (Helm's keep): the objects stay, with nothing managing the CRD.
		switch f.Severity {
		case lifecycle.SeverityError:
			f.Severity = lifecycle.SeverityWarning
		default:
			f.Severity = lifecycle.SeverityNote
		}
	}
	why := ""
	switch {
	case live.SameSource != "":
		why = " (both from " + live.SameSource + ")"
	case live.SameGroup:
		why = ", which ship other CRDs of its group " + old.Spec.Group
	}
	if empty {
		say = "nothing is lost: " + say
	}
	f.Message = fmt.Sprintf("%s %s and not in the new manifests%s: %s", old.Name, where, why, say)
	keep := stages.Advise(nil, "keep %s in the manifests while any object of it is to stay", old.Name)
	if helmMayKeep(old, owners) {
		keep.Text += fmt.Sprintf(" (or, where a Helm chart templates it, keep it out of helm upgrade's deletes: kubectl annotate crd %s %s=keep)", old.Name, helmKeep)
	}
	f.Fix = []lifecycle.Advice{keep,
		stages.Advise(nil, "to retire it: delete its objects first (kubectl delete %s --all -A, on every cluster; a controller may clean up what they manage), then drop it from the manifests", old.Name)}
	return f
}

// sourceMark reads one mark of what applied a CRD ("": none) and names it (a format).
type sourceMark struct {
	what  string
	value func(c *apiextensionsv1.CustomResourceDefinition) string
}

func labelMark(key string) sourceMark {
	return sourceMark{"label " + key + "=%s", func(c *apiextensionsv1.CustomResourceDefinition) string { return c.Labels[key] }}
}

func namespacedMark(what, name, namespace string, in func(*apiextensionsv1.CustomResourceDefinition) map[string]string) sourceMark {
	return sourceMark{what, func(c *apiextensionsv1.CustomResourceDefinition) string {
		if n := in(c)[name]; n != "" {
			return n + " in " + in(c)[namespace]
		}
		return ""
	}}
}

func annotations(c *apiextensionsv1.CustomResourceDefinition) map[string]string { return c.Annotations }
func labels(c *apiextensionsv1.CustomResourceDefinition) map[string]string      { return c.Labels }

// chartVersion is the version Helm's helm.sh/chart label ends with.
var chartVersion = regexp.MustCompile(`-v?[0-9]+\.[0-9]+\.[0-9]+.*$`)

// sourceMarks tell which source applied a CRD: first the pruning tool's (Helm release, Argo CD
// application, Flux Kustomization or HelmRelease), then the project's.
var sourceMarks = [][]sourceMark{{
	namespacedMark("Helm release %s", "meta.helm.sh/release-name", "meta.helm.sh/release-namespace", annotations),
	{"Argo CD application %s", func(c *apiextensionsv1.CustomResourceDefinition) string {
		app, _, ok := strings.Cut(c.Annotations["argocd.argoproj.io/tracking-id"], ":")
		if !ok {
			return ""
		}
		return app
	}},
	labelMark("argocd.argoproj.io/instance"),
	namespacedMark("Flux Kustomization %s", "kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace", labels),
	namespacedMark("Flux HelmRelease %s", "helm.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/namespace", labels),
}, {
	{"Helm chart %s", func(c *apiextensionsv1.CustomResourceDefinition) string {
		return chartVersion.ReplaceAllString(c.Labels["helm.sh/chart"], "")
	}},
	labelMark("app.kubernetes.io/instance"),
	labelMark("app.kubernetes.io/part-of"),
}}

// SameSource says whether what applied c applied one of refs too (the new manifests and their
// live CRDs), by Helm, Argo CD and Flux marks, else chart and app.kubernetes.io labels: evidence
// names the shared mark; unrelated says marks tell them apart (Istio's Gateway beside the
// Gateway API's). The pruning tool's marks come first: two releases of a chart are two sources.
func SameSource(c *apiextensionsv1.CustomResourceDefinition, refs []*apiextensionsv1.CustomResourceDefinition) (evidence string, unrelated bool) {
	for _, marks := range sourceMarks {
		for _, m := range marks {
			v := m.value(c)
			if v == "" {
				continue
			}
			for _, r := range refs {
				switch rv := m.value(r); {
				case rv == v:
					return fmt.Sprintf(m.what, v), false
				case rv != "":
					unrelated = true
				}
			}
		}
		if unrelated {
			return "", true
		}
	}
	return "", false
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
