package stages

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

func changes(p *Plan) string {
	var s []string
	for _, c := range p.Changes {
		s = append(s, fmt.Sprintf("%s.%s:%s>%s", c.Version, c.Field, c.From, c.To))
	}
	return strings.Join(s, " ")
}

func manifestWith(versions ...string) *apiextensionsv1.CustomResourceDefinition {
	m := crd(nil, versions...)
	m.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	return m
}

func webhook(service string, caBundle string) *apiextensionsv1.CustomResourceConversion {
	return &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{
		ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "ns", Name: service}, CABundle: []byte(caBundle)},
		ConversionReviewVersions: []string{"v1"}}}
}

func withConversion(c *apiextensionsv1.CustomResourceDefinition, conv *apiextensionsv1.CustomResourceConversion) *apiextensionsv1.CustomResourceDefinition {
	c.Spec.Conversion = conv
	return c
}

// --from-file brings the new version's schema; the live conversion stays
// unless asked, and a live caBundle the manifest lacks stays either way.
func TestPlanIntroduceKeepsTheLiveConversion(t *testing.T) {
	live := withConversion(crd([]string{"v1beta1"}, "v1beta1:served,storage"), webhook("conv", "CA"))
	for _, tc := range []struct {
		name     string
		manifest *apiextensionsv1.CustomResourceConversion
		fromFile bool
		changes  string
		note     string
	}{
		{name: "a manifest without caBundle: kept, said", manifest: webhook("conv", ""),
			changes: "v1.version:>added", note: "the manifest's conversion (Webhook service ns/conv, no caBundle) differs from the live one (Webhook service ns/conv, caBundle sha256:"},
		{name: "taken from the file, the live caBundle kept", manifest: webhook("conv", ""), fromFile: true,
			changes: "v1.version:>added", note: "the live caBundle is kept"},
		{name: "taken from the file: another service, shown", manifest: webhook("conv2", ""), fromFile: true,
			changes: "v1.version:>added .conversion:Webhook service ns/conv, caBundle sha256:4b650e5c>Webhook service ns/conv2, caBundle sha256:4b650e5c", note: "the live caBundle is kept"},
		{name: "the same conversion", manifest: webhook("conv", "CA"), changes: "v1.version:>added"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := withConversion(crd(nil, "v1beta1:served,storage", "v1:served"), tc.manifest)
			p, err := PlanPromote(live, "v1", "", PromoteOptions{Manifest: m, ConversionFromFile: tc.fromFile})
			if err != nil {
				t.Fatal(err)
			}
			if got := changes(p); got != tc.changes {
				t.Errorf("changes:\n got %s\nwant %s", got, tc.changes)
			}
			if tc.note != "" && !slices.ContainsFunc(p.Notes, func(n Advice) bool { return strings.Contains(n.Text, tc.note) }) {
				t.Errorf("notes %+v lack %q", p.Notes, tc.note)
			}
			if cc := p.After.Spec.Conversion.Webhook.ClientConfig; string(cc.CABundle) != "CA" {
				t.Errorf("caBundle after: %q", cc.CABundle)
			}
		})
	}
}

func TestPlanPromote(t *testing.T) {
	introduced := func() *apiextensionsv1.CustomResourceDefinition {
		return crd([]string{"v1beta1"}, "v1beta1:served,storage", "v1:served")
	}
	bridged := func() *apiextensionsv1.CustomResourceDefinition {
		return verified(introduced(), "v1", "v1beta1", nil)
	}
	passed := &Verification{From: "v1beta1", Objects: 7}
	for _, tc := range []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		version string
		to      Stage
		opts    PromoteOptions
		from    Stage
		changes string
		refusal string // substring of the refusal; "" means the plan must succeed
		instead *Step
	}{
		{name: "introduce from manifest", crd: crd([]string{"v1beta1"}, "v1beta1:served,storage"), version: "v1",
			opts: PromoteOptions{Manifest: manifestWith("v1beta1:served,storage", "v1:served,storage")},
			from: StageAbsent, changes: "v1.version:>added"},
		{name: "introduce without manifest", crd: crd([]string{"v1beta1"}, "v1beta1:served,storage"), version: "v1",
			refusal: "widgets.example.com has no version v1; it has v1beta1", instead: IntroduceStep("widgets.example.com", "v1", "CRD_MANIFEST")},
		{name: "a version name in capitals is a typo, not a version to introduce", crd: introduced(), version: "V1",
			refusal: `widgets.example.com has no version "V1"; did you mean v1?`},
		{name: "one version, none named: the next pair begins with a version to introduce", crd: crd([]string{"v1"}, "v1:served,storage"),
			refusal: "has one version, v1, and no pair in flight: name the version to introduce", instead: IntroduceStep("widgets.example.com", "VERSION", "CRD_MANIFEST")},
		{name: "no version name at all", crd: introduced(), version: "1.0",
			refusal: `"1.0" is not a version name: lowercase letters, digits and '-', starting with a letter (widgets.example.com has v1beta1, v1)`},
		{name: "a manifest for a step that is not introducing", crd: introduced(), version: "v1",
			opts:    PromoteOptions{Manifest: manifestWith("v1beta1:served,storage", "v1:served")},
			refusal: "a CRD manifest is taken only to introduce a version, and v1 is in widgets.example.com already (its next stage is bridge)",
			instead: PromoteToStep("widgets.example.com", "v1", StageBridge)},
		{name: "introduce: manifest lacks the version", crd: crd([]string{"v1beta1"}, "v1beta1:served,storage"), version: "v2",
			opts: PromoteOptions{Manifest: manifestWith("v1:served")}, refusal: "has no version v2"},
		{name: "bridge with a passed check", crd: introduced(), version: "v1", opts: PromoteOptions{Verification: passed},
			from: StageIntroduced, changes: "v1.annotation:>verified"},
		{name: "bridge without a check", crd: introduced(), version: "v1",
			refusal: "bridge needs a passed round-trip check", instead: PromoteToStep("widgets.example.com", "v1", StageBridge)},
		{name: "bridge with a check against another storage version", crd: introduced(), version: "v1",
			opts: PromoteOptions{Verification: &Verification{From: "v1alpha1"}}, refusal: "bridge needs a passed round-trip check",
			instead: PromoteToStep("widgets.example.com", "v1", StageBridge)},
		{name: "deprecate: switch storage, default warning", crd: bridged(), version: "v1", from: StageBridge,
			changes: "v1.storage:false>true v1beta1.storage:true>false v1beta1.deprecated:false>true v1beta1.deprecationWarning:>example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"},
		{name: "deprecate: own warning", crd: bridged(), version: "v1", opts: PromoteOptions{DeprecationWarning: "gone in 2027"}, from: StageBridge,
			changes: "v1.storage:false>true v1beta1.storage:true>false v1beta1.deprecated:false>true v1beta1.deprecationWarning:>gone in 2027"},
		{name: "deprecate an older version served without warning", crd: crd([]string{"v1"}, "v1beta1:served", "v1:served,storage"), version: "v1",
			from: StageServed, changes: "v1beta1.deprecated:false>true v1beta1.deprecationWarning:>example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"},
		{name: "block", crd: crd([]string{"v1"}, "v1beta1:served,deprecated", "v1:served,storage"), version: "v1",
			from: StageDeprecated, changes: "v1beta1.served:true>false"},
		{name: "block while still in storedVersions", crd: crd([]string{"v1beta1", "v1"}, "v1beta1:served,deprecated", "v1:served,storage"), version: "v1",
			refusal: "v1beta1 is still in status.storedVersions", instead: MigrateStep("widgets.example.com")},
		{name: "remove", crd: crd([]string{"v1"}, "v1beta1:deprecated", "v1:served,storage"), version: "v1",
			from: StageBlocked, changes: "v1beta1.version:present>"},
		{name: "remove while still in storedVersions", crd: crd([]string{"v1beta1", "v1"}, "v1beta1:deprecated", "v1:served,storage"), version: "v1",
			refusal: "v1beta1 is still in status.storedVersions", instead: MigrateStep("widgets.example.com")},
		{name: "deprecate every served older version at once", crd: crd([]string{"v1"}, "v1alpha1:served", "v1alpha2:served,deprecated", "v1beta1:served", "v1:served,storage"), version: "v1",
			from: StageServed, changes: "v1beta1.deprecated:false>true v1beta1.deprecationWarning:>example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget v1alpha1.deprecated:false>true v1alpha1.deprecationWarning:>example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget"},
		{name: "the switch deprecates an older version served without warning too", crd: verified(crd([]string{"v1beta1"}, "v1alpha1:served", "v1beta1:served,storage", "v1:served"), "v1", "v1beta1", nil), version: "v1",
			from: StageBridge, changes: "v1.storage:false>true v1beta1.storage:true>false v1beta1.deprecated:false>true v1beta1.deprecationWarning:>example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget v1alpha1.deprecated:false>true v1alpha1.deprecationWarning:>example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget"},
		{name: "block every older version", crd: crd([]string{"v1"}, "v1alpha1:served,deprecated", "v1alpha2:deprecated", "v1beta1:served,deprecated", "v1:served,storage"), version: "v1",
			from: StageDeprecated, changes: "v1beta1.served:true>false v1alpha1.served:true>false"},
		{name: "block while an older version is still in storedVersions", crd: crd([]string{"v1alpha1", "v1"}, "v1alpha1:served,deprecated", "v1beta1:served,deprecated", "v1:served,storage"), version: "v1",
			refusal: "v1alpha1 is still in status.storedVersions", instead: MigrateStep("widgets.example.com")},
		{name: "remove every older version", crd: crd([]string{"v1"}, "v1alpha1:deprecated", "v1beta1:deprecated", "v1:served,storage"), version: "v1",
			from: StageBlocked, changes: "v1beta1.version:present> v1alpha1.version:present>"},
		{name: "remove while two older versions are in storedVersions", crd: crd([]string{"v1alpha1", "v1beta1", "v1"}, "v1alpha1:deprecated", "v1beta1:deprecated", "v1:served,storage"), version: "v1",
			refusal: "v1beta1, v1alpha1 are still in status.storedVersions", instead: MigrateStep("widgets.example.com")},
		{name: "skip a stage", crd: introduced(), version: "v1", to: StageDeprecated,
			refusal: "v1 is introduced; the next stage is bridge, not deprecated", instead: PromoteToStep("widgets.example.com", "v1", StageBridge)},
		{name: "skip from bridge", crd: bridged(), version: "v1", to: StageBlocked,
			refusal: "the next stage is deprecated, not blocked", instead: PromoteToStep("widgets.example.com", "v1", StageDeprecated)},
		{name: "unknown stage", crd: introduced(), version: "v1", to: "gone", refusal: `unknown stage "gone"`},
		{name: "block the storage version", crd: introduced(), version: "v1beta1", to: StageBlocked,
			refusal: "v1beta1 is the storage version and every other version is newer", instead: PromoteStep("widgets.example.com", "v1")},
		{name: "deprecate towards an unserved version", crd: crd([]string{"v1beta1"}, "v1beta1:served,storage", "v1:-"), version: "v1",
			refusal: "v1 is not served"},
		{name: "deprecate when the new storage version is not served", crd: crd([]string{"v1"}, "v1beta1:served", "v1:storage"), version: "v1",
			refusal: "v1 is not served: deprecating v1beta1 would leave clients no version"},
		{name: "older version than storage", crd: crd([]string{"v1"}, "v1beta1:served,deprecated", "v1:served,storage", "v1alpha1:served"), version: "v1alpha1",
			refusal: "v1alpha1 is older than storage version v1", instead: PromoteStep("widgets.example.com", "v1")},
		{name: "two storage versions", crd: crd([]string{"v1"}, "v1beta1:served,storage", "v1:served,storage"), version: "v1",
			refusal: "has 2 storage versions (v1beta1, v1)"},
		{name: "one version", crd: crd([]string{"v1"}, "v1:served,storage"), version: "v1",
			refusal: "v1 is the only version of widgets.example.com", instead: IntroduceStep("widgets.example.com", "NEW_VERSION", "CRD_MANIFEST")},
		{name: "a version that does not exist, to a late stage", crd: introduced(), version: "v2", to: StageBlocked,
			refusal: "v2 is absent; the next stage is introduced, not blocked", instead: IntroduceStep("widgets.example.com", "v2", "CRD_MANIFEST")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.crd.DeepCopy()
			p, err := PlanPromote(tc.crd, tc.version, tc.to, tc.opts)
			if tc.refusal != "" {
				r, ok := err.(*Refusal)
				if !ok || !strings.Contains(r.Reason, tc.refusal) || !sameStep(r.Instead, tc.instead) {
					t.Fatalf("got plan %+v, err %v (instead %+v); want refusal %q instead %+v", p, err, r.Instead, tc.refusal, tc.instead)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.From != tc.from {
				t.Errorf("from = %s, want %s", p.From, tc.from)
			}
			if got := changes(p); got != tc.changes {
				t.Errorf("changes:\n got %s\nwant %s", got, tc.changes)
			}
			if fmt.Sprint(tc.crd) != fmt.Sprint(before) {
				t.Error("planning changed its input")
			}
			// The plan's result is where the pair now stands.
			if _, stage, err := PairStage(p.After, p.Pair.New); p.To != StageRemoved && (err != nil || stage != p.To) {
				t.Errorf("after the plan, %s is %s (%v), want %s", p.Pair.New, stage, err, p.To)
			}
		})
	}
}

func TestPlanRollback(t *testing.T) {
	bridged := verified(crd([]string{"v1beta1"}, "v1beta1:served,storage", "v1:served"), "v1", "v1beta1", nil)
	deprecated, err := PlanPromote(bridged, "v1", "", PromoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	switched := deprecated.After.DeepCopy()
	switched.Status.StoredVersions = []string{"v1beta1", "v1"}
	migrated := deprecated.After.DeepCopy()
	migrated.Status.StoredVersions = []string{"v1"}
	// A step taken by hand or by an earlier release leaves no record: the
	// rules decide.
	unrecorded := migrated.DeepCopy()
	delete(unrecorded.Annotations, StepsAnnotation)
	twoOld := verified(crd([]string{"v1beta1"}, "v1alpha1:served", "v1beta1:served,storage", "v1:served"), "v1", "v1beta1", nil)
	deprecatedTwo, err := PlanPromote(twoOld, "v1", "", PromoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	longAgo := crd([]string{"v1"}, "v1alpha1:served,deprecated", "v1beta1:served", "v1:served,storage")
	SpecVersion(longAgo, "v1alpha1").DeprecationWarning = ptr.To("v1alpha1 goes away in 2027")
	deprecatedServed, err := PlanPromote(longAgo, "v1", "", PromoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	someUnserved := crd([]string{"v1"}, "v1alpha1:deprecated", "v1beta1:served,deprecated", "v1:served,storage")
	blocked, err := PlanPromote(someUnserved, "v1", "", PromoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		crd      *apiextensionsv1.CustomResourceDefinition
		version  string
		offline  bool
		switchSt bool
		to       Stage
		changes  string
		refusal  string
		noteWant string
	}{
		{name: "deprecated back to bridge switches storage back and keeps the verification", crd: switched, to: StageBridge,
			changes:  "v1.storage:true>false v1beta1.storage:false>true v1beta1.deprecated:true>false v1beta1.deprecationWarning:example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget>",
			noteWant: "objects written since v1 became storage are stored at v1"},
		{name: "deprecated, old no longer stored: the step recorded a switch, so it is switched back", crd: migrated, to: StageBridge,
			changes:  "v1.storage:true>false v1beta1.storage:false>true v1beta1.deprecated:true>false v1beta1.deprecationWarning:example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget>",
			noteWant: "objects written since v1 became storage are stored at v1"},
		{name: "recorded: the step deprecated two old versions, both are undone", crd: deprecatedTwo.After, to: StageBridge,
			changes: "v1.storage:true>false v1beta1.storage:false>true v1beta1.deprecated:true>false v1beta1.deprecationWarning:example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget> " +
				"v1alpha1.deprecated:true>false v1alpha1.deprecationWarning:example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget>"},
		{name: "recorded: a version deprecated long before the step keeps its deprecation and text", crd: deprecatedServed.After, to: StageServed,
			changes: "v1beta1.deprecated:true>false v1beta1.deprecationWarning:example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget>", noteWant: "only the deprecation it made is undone"},
		{name: "recorded: a version unserved before the step to blocked stays unserved", crd: blocked.After, to: StageDeprecated,
			changes: "v1beta1.served:false>true", noteWant: "served again as before the step: v1beta1"},
		{name: "deprecated, no record, old no longer stored: only the deprecation is undone", crd: unrecorded, to: StageServed,
			changes:  "v1beta1.deprecated:true>false v1beta1.deprecationWarning:example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget>",
			noteWant: "v1 stays the storage version"},
		{name: "deprecated, several old versions never storage: storage stays", crd: crd([]string{"v1"}, "v1alpha1:served,deprecated", "v1alpha2:served,deprecated", "v1:served,storage"), to: StageServed,
			changes: "v1alpha2.deprecated:true>false v1alpha1.deprecated:true>false"},
		{name: "served, old stored: a switch back, to introduced without a bridge record", crd: crd([]string{"v1beta1", "v1"}, "v1beta1:served", "v1:served,storage"), to: StageIntroduced,
			changes: "v1.storage:true>false v1beta1.storage:false>true"},
		{name: "served, old never stored: nothing to undo", crd: crd([]string{"v1"}, "v1beta1:served", "v1:served,storage"), refusal: "nothing to roll back"},
		{name: "deprecated, old stored but not served: only the deprecation is undone", crd: crd([]string{"v1beta1", "v1"}, "v1alpha1:served,deprecated", "v1beta1:deprecated", "v1:served,storage"), to: StageServed,
			changes: "v1alpha1.deprecated:true>false"},
		{name: "offline, a file without status: the switch back, checked on the cluster", crd: deprecated.After, offline: true, to: StageBridge,
			changes:  "v1.storage:true>false v1beta1.storage:false>true v1beta1.deprecated:true>false v1beta1.deprecationWarning:example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget>",
			noteWant: "precondition: switching storage back to v1beta1 is checked on the cluster"},
		{name: "bridge back to introduced", crd: bridged, to: StageIntroduced, changes: "v1.annotation:verified>"},
		{name: "introduced back to absent", crd: crd([]string{"v1beta1"}, "v1beta1:served,storage", "v1:served"), to: StageAbsent, changes: "v1.version:present>"},
		{name: "offline, introduced keeps its schema", crd: crd(nil, "v1beta1:served,storage", "v1:served"), offline: true, refusal: "v1 is a version of this file with its schema"},
		{name: "introduced, but stored at: refused", crd: crd([]string{"v1beta1", "v1"}, "v1beta1:served,storage", "v1:served"), refusal: "v1 is in status.storedVersions"},
		{name: "blocked back to deprecated", crd: crd([]string{"v1"}, "v1beta1:deprecated", "v1:served,storage"), to: StageDeprecated, changes: "v1beta1.served:false>true"},
		{name: "blocked back to deprecated serves every older version", crd: crd([]string{"v1"}, "v1alpha1:deprecated", "v1beta1:deprecated", "v1:served,storage"), to: StageDeprecated,
			changes: "v1beta1.served:false>true v1alpha1.served:false>true"},
		{name: "removed cannot be rolled back", crd: crd([]string{"v1"}, "v1:served,storage"), refusal: "a removed version cannot be brought back by the plugin"},
		{name: "two pairs in flight", crd: crd([]string{"v1"}, "v1beta1:served,deprecated", "v1:served,storage", "v2:served"), refusal: "several versions in flight"},
		{name: "two pairs, one named", crd: crd([]string{"v1"}, "v1beta1:served,deprecated", "v1:served,storage", "v2:served"), version: "v2", to: StageAbsent, changes: "v2.version:present>"},
		{name: "--switch-storage, no record, old never stored (a downgrade): storage goes back", crd: unrecorded, switchSt: true, to: StageBridge,
			changes:  "v1.storage:true>false v1beta1.storage:false>true v1beta1.deprecated:true>false v1beta1.deprecationWarning:example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget>",
			noteWant: "objects written since v1 became storage are stored at v1"},
		{name: "--switch-storage, served and never stored (another tool's step)", crd: crd([]string{"v1"}, "v1beta1:served", "v1:served,storage"), switchSt: true, to: StageIntroduced,
			changes: "v1.storage:true>false v1beta1.storage:false>true"},
		{name: "--switch-storage, a record that only deprecated: the switch by rule", crd: deprecatedServed.After, switchSt: true, to: StageIntroduced,
			changes: "v1.storage:true>false v1beta1.storage:false>true v1beta1.deprecated:true>false v1beta1.deprecationWarning:example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget>"},
		{name: "--switch-storage, old not served: serve it first", crd: crd([]string{"v1"}, "v1beta1:deprecated", "v1:served,storage"), switchSt: true, refusal: "v1beta1 is not served: serve it again first"},
		{name: "--switch-storage, the new version is not storage", crd: bridged, switchSt: true, refusal: "v1 is not the storage version (v1beta1 is)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanRollback(tc.crd, tc.version, RollbackOptions{Offline: tc.offline, SwitchStorage: tc.switchSt})
			if tc.refusal != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refusal) {
					t.Fatalf("got %v, want refusal %q", err, tc.refusal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.To != tc.to || changes(p) != tc.changes {
				t.Errorf("to %s changes %s\nwant to %s changes %s", p.To, changes(p), tc.to, tc.changes)
			}
			if tc.noteWant != "" && !slices.ContainsFunc(p.Notes, func(n Advice) bool { return strings.Contains(n.Text, tc.noteWant) }) {
				t.Errorf("notes %+v lack %q", p.Notes, tc.noteWant)
			}
			if _, stage, err := PairStage(p.After, p.Pair.New); p.To != StageAbsent && (err != nil || stage != p.To) {
				t.Errorf("after rollback %s is %s (%v), want %s", p.Pair.New, stage, err, p.To)
			}
		})
	}
}

// The undo of a switch that failed its check puts back every flag the
// step changed, however many versions it deprecated, and drops the records
// it is told the check disproved.
func TestPlanUndo(t *testing.T) {
	before := verified(crd([]string{"v1beta1"}, "v1alpha1:served", "v1beta1:served,storage", "v1:served"), "v1", "v1beta1", nil)
	step, err := PlanPromote(before, "v1", StageDeprecated, PromoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	undo, err := PlanUndo(step.After, step)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(undo.After.Spec.Versions) != fmt.Sprint(before.Spec.Versions) {
		t.Errorf("undo left\n%v\nwant\n%v", undo.After.Spec.Versions, before.Spec.Versions)
	}
	if _, ok := undo.After.Annotations[VerifiedAnnotationPrefix+"v1"]; !ok {
		t.Error("undo dropped a record it was not told to")
	}
	if undo.From != StageDeprecated || undo.To != StageBridge {
		t.Errorf("undo %s → %s, want deprecated → bridge", undo.From, undo.To)
	}
	forgot, err := PlanUndo(step.After, step, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := forgot.After.Annotations[VerifiedAnnotationPrefix+"v1"]; ok {
		t.Error("undo kept the record of v1 it was told to drop")
	}

	// Another writer removed v1alpha1, which the step deprecated, before
	// the undo: the rest is put back, and v1alpha1 stays removed.
	meanwhile := step.After.DeepCopy()
	meanwhile.Spec.Versions = meanwhile.Spec.Versions[1:]
	undo, err = PlanUndo(meanwhile, step)
	if err != nil {
		t.Fatalf("undo after another writer removed v1alpha1: %v", err)
	}
	if fmt.Sprint(undo.After.Spec.Versions) != fmt.Sprint(before.Spec.Versions[1:]) {
		t.Errorf("undo left\n%v\nwant\n%v", undo.After.Spec.Versions, before.Spec.Versions[1:])
	}
	// The version to be storage again cannot be put back once gone.
	gone := step.After.DeepCopy()
	gone.Spec.Versions = slices.DeleteFunc(gone.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == "v1beta1" })
	if _, err := PlanUndo(gone, step); err == nil {
		t.Error("undo planned with v1beta1, to be storage again, gone")
	}
}

// Steps forward, then as many back, give the CRD back as it was: every
// version's flags and texts and every annotation, the record included.
func TestStepsForwardThenBackGiveTheCRDBack(t *testing.T) {
	start := verified(crd([]string{"v1beta1"}, "v1alpha2:served,deprecated", "v1alpha1", "v1beta1:served,storage", "v1:served"), "v1", "v1beta1", nil)
	SpecVersion(start, "v1alpha2").DeprecationWarning = ptr.To("v1alpha2 goes away in 2027")
	now := start
	for _, to := range []Stage{StageDeprecated, StageBlocked} {
		p, err := PlanPromote(now, "v1", to, PromoteOptions{DeprecationWarning: "use v1"})
		if err != nil {
			t.Fatalf("promote to %s: %v", to, err)
		}
		now = p.After.DeepCopy()
		now.Status.StoredVersions = []string{"v1"}
	}
	if n := len(Steps(now)); n != 2 {
		t.Fatalf("%d steps recorded, want 2", n)
	}
	for _, to := range []Stage{StageDeprecated, StageBridge} {
		p, err := PlanRollback(now, "", RollbackOptions{})
		if err != nil || p.To != to {
			t.Fatalf("rollback: %v to %v, want %s", err, p, to)
		}
		now = p.After
	}
	if !reflect.DeepEqual(now.Spec.Versions, start.Spec.Versions) || !reflect.DeepEqual(now.Annotations, start.Annotations) {
		t.Errorf("forward and back left\n%v %v\nwant\n%v %v", now.Spec.Versions, now.Annotations, start.Spec.Versions, start.Annotations)
	}
}

// The undo of a step takes its record too; the undo of a step back puts
// the record it took back.
func TestAnUndoKeepsTheRecordTrue(t *testing.T) {
	start := verified(crd([]string{"v1beta1"}, "v1beta1:served,storage", "v1:served"), "v1", "v1beta1", nil)
	step, err := PlanPromote(start, "v1", StageDeprecated, PromoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	undo, err := PlanUndo(step.After, step)
	if err != nil || len(Steps(undo.After)) != 0 {
		t.Fatalf("undo of the step: %v, record %v", err, Steps(undo.After))
	}
	back, err := PlanRollback(step.After, "", RollbackOptions{})
	if err != nil || len(Steps(back.After)) != 0 {
		t.Fatalf("rollback: %v, record %v", err, Steps(back.After))
	}
	redo, err := PlanUndo(back.After, back)
	if err != nil || len(Steps(redo.After)) != 1 || Steps(redo.After)[0].To != StageDeprecated {
		t.Fatalf("undo of the rollback: %v, record %v", err, Steps(redo.After))
	}
}
