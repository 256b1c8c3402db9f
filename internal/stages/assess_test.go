package stages

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/crdtest"
)

// crd builds widgets.example.com (crdtest.Widgets).
var crd = crdtest.Widgets

// verified records a passed check of v against from; edit changes the CRD
// afterwards (nil for none).
func verified(c *apiextensionsv1.CustomResourceDefinition, v, from string, edit func(*apiextensionsv1.CustomResourceDefinition)) *apiextensionsv1.CustomResourceDefinition {
	raw, _ := json.Marshal(Verification{From: from, Fingerprint: Fingerprint(c, from, v), Objects: 10, At: time.Unix(0, 0).UTC()})
	c.Annotations = map[string]string{VerifiedAnnotationPrefix + v: string(raw)}
	if edit != nil {
		edit(c)
	}
	return c
}

func TestAssessStages(t *testing.T) {
	for _, tc := range []struct {
		name       string
		crd        *apiextensionsv1.CustomResourceDefinition
		stages     string // "version=stage ..." in priority order
		action     Action
		next       *Step
		problemSub string // a problem message must contain this; "" means no problems
	}{
		{
			name:   "single version",
			crd:    crd([]string{"v1"}, "v1:served,storage"),
			stages: "v1=storage",
			action: ActionNone,
		},
		{
			name:   "introduced: newer served, not storage, not verified",
			crd:    crd([]string{"v1beta1"}, "v1beta1:served,storage", "v1:served"),
			stages: "v1=introduced v1beta1=storage",
			action: ActionReady,
			next:   PromoteToStep("widgets.example.com", "v1", StageBridge),
		},
		{
			name:   "bridge: verified against current storage, schemas and conversion",
			crd:    verified(crd([]string{"v1beta1"}, "v1beta1:served,storage", "v1:served"), "v1", "v1beta1", nil),
			stages: "v1=bridge v1beta1=storage",
			action: ActionReady,
			next:   PromoteToStep("widgets.example.com", "v1", StageDeprecated),
		},
		{
			name: "stale verification: schema changed since",
			crd: verified(crd([]string{"v1beta1"}, "v1beta1:served,storage", "v1:served"), "v1", "v1beta1", func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions[1].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}
			}),
			stages: "v1=introduced v1beta1=storage",
			action: ActionReady,
			next:   PromoteToStep("widgets.example.com", "v1", StageBridge),
		},
		{
			name:   "stale verification: against another storage version",
			crd:    verified(crd([]string{"v1beta1"}, "v1beta1:served,storage", "v1:served"), "v1", "v1alpha1", nil),
			stages: "v1=introduced v1beta1=storage",
			action: ActionReady,
			next:   PromoteToStep("widgets.example.com", "v1", StageBridge),
		},
		{
			name:       "deprecated, migration pending",
			crd:        crd([]string{"v1beta1", "v1"}, "v1beta1:served,deprecated", "v1:served,storage"),
			stages:     "v1=storage v1beta1=deprecated",
			action:     ActionRun,
			next:       MigrateStep("widgets.example.com"),
			problemSub: "migration pending: objects may still be stored at v1beta1",
		},
		{
			name:   "deprecated, migrated",
			crd:    crd([]string{"v1"}, "v1beta1:served,deprecated", "v1:served,storage"),
			stages: "v1=storage v1beta1=deprecated",
			action: ActionReady,
			next:   PromoteToStep("widgets.example.com", "v1", StageBlocked),
		},
		{
			name:   "blocked",
			crd:    crd([]string{"v1"}, "v1beta1:deprecated", "v1:served,storage"),
			stages: "v1=storage v1beta1=blocked",
			action: ActionReady,
			next:   PromoteToStep("widgets.example.com", "v1", StageRemoved),
		},
		{
			name:       "blocked but still stored",
			crd:        crd([]string{"v1beta1", "v1"}, "v1beta1:-", "v1:served,storage"),
			stages:     "v1=storage v1beta1=blocked",
			action:     ActionRun,
			next:       MigrateStep("widgets.example.com"),
			problemSub: "migration pending",
		},
		{
			name:       "served older version never deprecated",
			crd:        crd([]string{"v1"}, "v1beta1:served", "v1:served,storage"),
			stages:     "v1=storage v1beta1=served",
			action:     ActionReady,
			next:       PromoteToStep("widgets.example.com", "v1", StageDeprecated),
			problemSub: "v1beta1 is served and older than storage version v1 but not deprecated",
		},
		{
			name:       "storedVersions names a version missing from spec",
			crd:        crd([]string{"v1alpha1", "v1"}, "v1:served,storage"),
			stages:     "v1=storage v1alpha1=missing",
			action:     ActionRun,
			next:       MigrateStep("widgets.example.com"),
			problemSub: "status.storedVersions names v1alpha1, which is missing from spec.versions",
		},
		{
			name:       "storage marked deprecated",
			crd:        crd([]string{"v1"}, "v1:served,storage,deprecated"),
			stages:     "v1=storage",
			action:     ActionNone,
			problemSub: "storage version v1 is marked deprecated",
		},
		{
			name:       "two storage versions (a manifest the API server refuses)",
			crd:        crd([]string{"v1"}, "v1beta1:served,storage", "v1:served,storage"),
			stages:     "v1=storage v1beta1=storage",
			action:     ActionFix,
			problemSub: "2 versions have storage: true (v1, v1beta1); exactly one must",
		},
		{
			name:       "no storage version",
			crd:        crd(nil, "v1beta1:served", "v1:served"),
			stages:     "v1=introduced v1beta1=introduced",
			action:     ActionFix,
			problemSub: "no version has storage: true; exactly one must",
		},
		{
			name:   "three versions, order by priority not by spec",
			crd:    crd([]string{"v1"}, "v2alpha1:served", "v1:served,storage", "v1beta1:served,deprecated"),
			stages: "v1=storage v1beta1=deprecated v2alpha1=served",
			action: ActionReady,
			next:   PromoteToStep("widgets.example.com", "v1", StageDeprecated),
			// v2alpha1 has lower priority than GA v1, so serving it undeprecated is flagged.
			problemSub: "v2alpha1 is served and older than storage version v1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Assess(tc.crd)
			var got []string
			for _, v := range a.Versions {
				got = append(got, v.Name+"="+string(v.Stage))
			}
			if s := strings.Join(got, " "); s != tc.stages {
				t.Errorf("stages = %q, want %q", s, tc.stages)
			}
			if a.Next.Action != tc.action || !sameStep(a.Next.Step, tc.next) {
				t.Errorf("next = %+v (step %+v), want %s %+v", a.Next, a.Next.Step, tc.action, tc.next)
			}
			if tc.problemSub == "" && len(a.Problems) > 0 {
				t.Errorf("unexpected problems: %+v", a.Problems)
			}
			if tc.problemSub != "" && !hasProblem(a, tc.problemSub) {
				t.Errorf("problems %+v lack %q", a.Problems, tc.problemSub)
			}
		})
	}
}

func sameStep(got, want *Step) bool {
	return got == nil && want == nil || got != nil && want != nil && reflect.DeepEqual(*got, *want)
}

func hasProblem(a Assessment, sub string) bool {
	for _, p := range a.Problems {
		if strings.Contains(p.Message, sub) {
			return true
		}
	}
	return false
}

func TestAssessStorageMigratingWaits(t *testing.T) {
	c := crd([]string{"v1beta1", "v1"}, "v1beta1:served,deprecated", "v1:served,storage")
	c.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.StorageMigrating, Status: apiextensionsv1.ConditionTrue}}
	a := Assess(c)
	if !a.Migrating || a.Next.Action != ActionWait {
		t.Fatalf("migrating=%v next=%+v, want migrating and wait", a.Migrating, a.Next)
	}
}

func TestDeprecationWarning(t *testing.T) {
	c := crd([]string{"v1"}, "v1beta1:served,deprecated", "v1:served,storage", "v1alpha1:served,deprecated")
	for _, tc := range []struct{ v, want string }{
		{"v1beta1", "example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"},
		{"v1alpha1", "example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget"},
	} {
		if got := DeprecationWarning(c, tc.v); got != tc.want {
			t.Errorf("DeprecationWarning(%s) = %q, want %q", tc.v, got, tc.want)
		}
	}
	own := "use v1, v1beta1 goes away in 2027"
	c.Spec.Versions[0].DeprecationWarning = &own
	if got := DeprecationWarning(c, "v1beta1"); got != own {
		t.Errorf("own warning = %q, want %q", got, own)
	}
	solo := crd([]string{"v1"}, "v1:served,storage,deprecated")
	if got := DeprecationWarning(solo, "v1"); got != "example.com/v1 Widget is deprecated" {
		t.Errorf("no replacement: %q", got)
	}
}

// After a migrate left objects for data loss, the next step is a way
// forward, not the same migrate: while the note holds for the CRD as it
// is (its generation and storage version) and a migration is pending.
func TestNextStepAfterARefusedMigrate(t *testing.T) {
	pending := crd([]string{"v1beta1", "v1"}, "v1beta1:served,deprecated", "v1:served,storage")
	note := func(c *apiextensionsv1.CustomResourceDefinition, r Refused) *apiextensionsv1.CustomResourceDefinition {
		c = c.DeepCopy()
		c.Annotations = map[string]string{RefusedAnnotation: r.Annotation()}
		return c
	}
	left := Refused{Storage: "v1", Generation: pending.Generation, Objects: 5, First: []string{"ns/a", "ns/b", "ns/c"}, Fields: []string{"spec.legacy"}}
	for _, tc := range []struct {
		name   string
		crd    *apiextensionsv1.CustomResourceDefinition
		action Action
		accept bool
	}{
		{"noted: edit them or accept the loss", note(pending, left), ActionFix, true},
		{"no note: migrate", pending, ActionRun, false},
		{"a note of another generation: migrate", note(pending, Refused{Storage: "v1", Generation: pending.Generation + 1, Objects: 5}), ActionRun, false},
		{"a note of another storage version: migrate", note(pending, Refused{Storage: "v1beta1", Generation: pending.Generation, Objects: 5}), ActionRun, false},
	} {
		next := Assess(tc.crd).Next
		if next.Action != tc.action || next.Step == nil || next.Step.Op != OpMigrate || next.Step.AcceptLoss != tc.accept {
			t.Errorf("%s: %+v %+v", tc.name, next, next.Step)
		}
	}
	if r := Assess(note(pending, left)).Next.Reason; !strings.Contains(r, "5 objects stored at v1beta1") || !strings.Contains(r, "spec.legacy (ns/a, ns/b, ns/c and 2 more)") {
		t.Errorf("reason: %s", r)
	}
}

// A CRD the API server has not established serves no object: status says
// why, from its conditions, and the only way on is to fix the manifest. A
// CRD with no condition (a file, one just created) is not judged.
func TestAssessACRDTheAPIServerDoesNotServe(t *testing.T) {
	withConditions := func(cs ...apiextensionsv1.CustomResourceDefinitionCondition) *apiextensionsv1.CustomResourceDefinition {
		c := crd([]string{"v1"}, "v1:served,storage")
		c.Status.Conditions = cs
		return c
	}
	clash := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse, Reason: "ShortNamesConflict", Message: `"wg" is already in use`}
	for _, tc := range []struct {
		name   string
		crd    *apiextensionsv1.CustomResourceDefinition
		want   string // in NotServed; "" for served
		action Action // the next step's, where not served
	}{
		{"a file: no conditions", crd([]string{"v1"}, "v1:served,storage"), "", ""},
		{"established", withConditions(apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}), "", ""},
		// Only an edit of the manifest ends a clash.
		{"names clash", withConditions(clash, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted"}), `NamesAccepted=False: "wg" is already in use`, ActionFix},
		// Being set up: an edit of its names would change nothing.
		{"not established, names accepted", withConditions(apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "Installing"}), "Established=False: Installing", ActionWait},
	} {
		a := Assess(tc.crd)
		if a.NotServed != tc.want {
			t.Errorf("%s: NotServed %q, want %q", tc.name, a.NotServed, tc.want)
			continue
		}
		if tc.want != "" && (a.Next.Action != tc.action || !hasProblem(a, tc.want)) {
			t.Errorf("%s: next %+v, problems %+v: want %s first, and the reason said", tc.name, a.Next, a.Problems, tc.action)
		}
	}
}

// usage is usages.apiextensions.crossplane.io after Crossplane v2.0.0: both
// versions deprecated, the older one storage.
var usage = crd([]string{"v1alpha1"}, "v1alpha1:served,storage,deprecated", "v1beta1:served,deprecated")

// The next step never stops serving a version while an older one stays
// served, and a kind whose every served version is deprecated is retiring:
// no version to move to, nothing for the plugin to do.
func TestNextStepByVersionPriority(t *testing.T) {
	const w = "widgets.example.com"
	for _, tc := range []struct {
		name       string
		crd        *apiextensionsv1.CustomResourceDefinition
		stages     string
		action     Action
		next       *Step
		reasonSub  []string // the next step's reason says each
		problemSub string
	}{
		{
			name:   "everything deprecated, the older storage (Crossplane's Usage after v2.0.0): retiring",
			crd:    usage,
			stages: "v1beta1=deprecated v1alpha1=storage",
			action: ActionNone,
			reasonSub: []string{"every served version (v1beta1, v1alpha1) is deprecated, storage version v1alpha1 included: Widget is retiring",
				"no version to move to", "clients should move off Widget", "its owner will remove the CRD, and every object with it",
				"nothing to migrate", "stopping serving the storage version is not a step of the plugin"},
			problemSub: "Widget is retiring",
		},
		{
			name:       "retiring, an older deprecated version too: it is not stopped for a version as deprecated",
			crd:        crd([]string{"v1beta1"}, "v1alpha1:served,deprecated", "v1beta1:served,storage,deprecated"),
			stages:     "v1beta1=storage v1alpha1=deprecated",
			action:     ActionNone,
			reasonSub:  []string{"Widget is retiring"},
			problemSub: "Widget is retiring",
		},
		{
			name:       "retiring with objects at another version: migrate first",
			crd:        crd([]string{"v1beta1", "v1alpha1"}, "v1alpha1:served,storage,deprecated", "v1beta1:served,deprecated"),
			stages:     "v1beta1=deprecated v1alpha1=storage",
			action:     ActionRun,
			next:       MigrateStep(w),
			problemSub: "Widget is retiring",
		},
		{
			name:      "the plain case: storage newest, the older deprecated is stopped",
			crd:       crd([]string{"v1"}, "v1beta1:served,deprecated", "v1:served,storage"),
			stages:    "v1=storage v1beta1=deprecated",
			action:    ActionReady,
			next:      PromoteToStep(w, "v1", StageBlocked),
			reasonSub: []string{"stop serving v1beta1"},
		},
		{
			name:      "a newer version served, not deprecated, the older storage: introduced",
			crd:       crd([]string{"v1alpha1"}, "v1alpha1:served,storage", "v1beta1:served"),
			stages:    "v1beta1=introduced v1alpha1=storage",
			action:    ActionReady,
			next:      PromoteToStep(w, "v1beta1", StageBridge),
			reasonSub: []string{"v1beta1→v1alpha1→v1beta1"},
		},
		{
			name:       "storage deprecated, a newer version not: not retiring, the newer one takes over",
			crd:        crd([]string{"v1alpha1"}, "v1alpha1:served,storage,deprecated", "v1beta1:served"),
			stages:     "v1beta1=introduced v1alpha1=storage",
			action:     ActionReady,
			next:       PromoteToStep(w, "v1beta1", StageBridge),
			problemSub: "storage version v1alpha1 is marked deprecated",
		},
		{
			name:       "a newer version deprecated, the older storage not: no forward step, neither is stopped",
			crd:        crd([]string{"v1alpha1"}, "v1alpha1:served,storage", "v1beta1:served,deprecated"),
			stages:     "v1beta1=deprecated v1alpha1=storage",
			action:     ActionNone,
			reasonSub:  []string{"v1beta1 is deprecated though newer than storage version v1alpha1", "stops serving no version while an older one stays served"},
			problemSub: "v1beta1 is deprecated though newer than storage version v1alpha1",
		},
		{
			name:      "deprecated on both sides of storage: only the older one is stopped",
			crd:       crd([]string{"v1beta1"}, "v1alpha1:served,deprecated", "v1beta1:served,storage", "v1:served,deprecated"),
			stages:    "v1=deprecated v1beta1=storage v1alpha1=deprecated",
			action:    ActionReady,
			next:      PromoteToStep(w, "v1beta1", StageBlocked),
			reasonSub: []string{"stop serving v1alpha1"},
			// v1, above storage with nothing to take over, is flagged.
			problemSub: "v1 is deprecated though newer than storage version v1beta1",
		},
		{
			name:      "a newer deprecated version beside one that takes over: the newest goes forward",
			crd:       crd([]string{"v1alpha1"}, "v1alpha1:served,storage", "v1beta1:served,deprecated", "v1:served"),
			stages:    "v1=introduced v1beta1=deprecated v1alpha1=storage",
			action:    ActionReady,
			next:      PromoteToStep(w, "v1", StageBridge),
			reasonSub: []string{"v1→v1alpha1→v1"},
		},
		{
			name:   "a newer version unserved: not removed while the older one is storage",
			crd:    crd([]string{"v1alpha1"}, "v1alpha1:served,storage", "v1beta1:-"),
			stages: "v1beta1=blocked v1alpha1=storage",
			action: ActionNone,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := Assess(tc.crd)
			var got []string
			for _, v := range a.Versions {
				got = append(got, v.Name+"="+string(v.Stage))
			}
			if s := strings.Join(got, " "); s != tc.stages {
				t.Errorf("stages = %q, want %q", s, tc.stages)
			}
			if a.Next.Action != tc.action || !sameStep(a.Next.Step, tc.next) {
				t.Errorf("next = %+v (step %+v), want %s %+v", a.Next, a.Next.Step, tc.action, tc.next)
			}
			for _, sub := range tc.reasonSub {
				if !strings.Contains(a.Next.Reason, sub) {
					t.Errorf("reason %q lacks %q", a.Next.Reason, sub)
				}
			}
			if tc.problemSub == "" && len(a.Problems) > 0 {
				t.Errorf("unexpected problems: %+v", a.Problems)
			}
			if tc.problemSub != "" && !hasProblem(a, tc.problemSub) {
				t.Errorf("problems %+v lack %q", a.Problems, tc.problemSub)
			}
			if s := a.Next.Step; s != nil && s.Op == OpPromote {
				assertPriorityKept(t, tc.crd, s)
			}
		})
	}
}

// assertPriorityKept plans the advised promote, which must be taken, and
// checks that no version stops being served while an older one stays.
func assertPriorityKept(t *testing.T, c *apiextensionsv1.CustomResourceDefinition, s *Step) {
	t.Helper()
	p, err := PlanPromote(c, s.Version, s.To, PromoteOptions{Verification: &Verification{From: StorageVersion(c)}})
	if err != nil {
		t.Fatalf("status advises promote %s --to %s, and it is refused: %v", s.Version, s.To, err)
	}
	for _, before := range c.Spec.Versions {
		after := SpecVersion(p.After, before.Name)
		if !before.Served || after != nil && after.Served {
			continue
		}
		for _, other := range p.After.Spec.Versions {
			if other.Served && Newer(before.Name, other.Name) {
				t.Errorf("promote %s --to %s stops serving %s while the older %s stays served", s.Version, s.To, before.Name, other.Name)
			}
		}
	}
}

// promote on a kind with no way forward refuses with the reason and no
// command that would be refused in turn.
func TestPromoteWithNoWayForward(t *testing.T) {
	newerDeprecated := crd([]string{"v1alpha1"}, "v1alpha1:served,storage", "v1beta1:served,deprecated")
	for _, tc := range []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		version string
		to      Stage
		want    string
	}{
		{"retiring, the pair in flight", usage, "", "", "Widget is retiring"},
		{"retiring, stop serving the newer", usage, "v1alpha1", StageBlocked, "Widget is retiring"},
		{"retiring, the newer to take over", usage, "v1beta1", "", "Widget is retiring"},
		{"newer deprecated, the pair in flight", newerDeprecated, "", "", "v1beta1 is deprecated though newer than storage version v1alpha1"},
		{"newer deprecated, stop serving it", newerDeprecated, "v1alpha1", StageBlocked, "v1beta1 is deprecated though newer than storage version v1alpha1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PlanPromote(tc.crd, tc.version, tc.to, PromoteOptions{})
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("promote %q --to %q: %v, want a refusal", tc.version, tc.to, err)
			}
			if !strings.Contains(r.Reason, tc.want) || r.Instead != nil {
				t.Errorf("refusal %q (instead %+v), want it to say %q and name no command", r.Reason, r.Instead, tc.want)
			}
		})
	}
}
