package check

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// rules lists the findings as "rule version" strings, in order.
func rules(fs []results.Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s %s %s", f.Severity, f.Rule, f.Version))
	}
	return out
}

func TestCheckUpgrade(t *testing.T) {
	withSchema := func(c *apiextensionsv1.CustomResourceDefinition, v string, fields ...string) *apiextensionsv1.CustomResourceDefinition {
		spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
		for _, f := range fields {
			spec.Properties[f] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		}
		stages.SpecVersion(c, v).Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}}}
		return c
	}
	for _, tc := range []struct {
		name     string
		old, new *apiextensionsv1.CustomResourceDefinition
		stored   []string // nil: from files
		want     []string
	}{
		{name: "a new CRD has nothing to compare with", new: crd(nil, "v1:served,storage"), want: []string{}},
		{name: "unchanged", old: crd(nil, "v1:served,storage"), new: crd(nil, "v1:served,storage"), stored: []string{"v1"}, want: []string{}},
		{name: "the bridge step: v1 served beside storage v1beta1",
			old: crd(nil, "v1beta1:served,storage"), new: crd(nil, "v1beta1:served,storage", "v1:served"), stored: []string{"v1beta1"}, want: []string{}},
		{name: "the deprecated step: storage switched to a served version, the old one deprecated",
			old: crd(nil, "v1beta1:served,storage", "v1:served"), new: crd(nil, "v1beta1:served,deprecated", "v1:served,storage"), stored: []string{"v1beta1"},
			want: []string{"warning versionDeprecated v1beta1"}},
		{name: "storedVersionRemoved: dropping a version objects may be stored at",
			old: crd(nil, "v1alpha1:served,deprecated", "v1:served,storage"), new: crd(nil, "v1:served,storage"), stored: []string{"v1alpha1", "v1"},
			want: []string{"error storedVersionRemoved v1alpha1", "error removedWhileServed v1alpha1", "warning versionRemoved v1alpha1"}},
		{name: "dropping an unserved version after migrate pruned it is clean",
			old: crd(nil, "v1alpha1:deprecated", "v1:served,storage"), new: crd(nil, "v1:served,storage"), stored: []string{"v1"},
			want: []string{"note versionRemoved v1alpha1"}},
		{name: "from files, the old storage version counts as stored",
			old: crd(nil, "v1alpha1:deprecated", "v1:served,storage"), new: crd(nil, "v1alpha1:deprecated", "v1:served"), stored: nil,
			want: []string{}},
		{name: "from files, removing a version never storage there may still be refused by a cluster that stored at it",
			old: crd(nil, "v1alpha2", "v1:served,storage"), new: crd(nil, "v1:served,storage"), stored: nil,
			want: []string{"warning removedVersionMayBeStored v1alpha2", "note versionRemoved v1alpha2"}},
		{name: "storageWithoutBridge: storage switched to a version never served",
			old: crd(nil, "v1beta1:served,storage"), new: crd(nil, "v1beta1:served,deprecated", "v1:served,storage"), stored: []string{"v1beta1"},
			want: []string{"error storageWithoutBridge v1", "warning versionDeprecated v1beta1"}},
		{name: "storageSwitchAndUnserve: two steps in one release",
			old: crd(nil, "v1beta1:served,storage", "v1:served"), new: crd(nil, "v1beta1:deprecated", "v1:served,storage"), stored: []string{"v1beta1"},
			want: []string{"error storageSwitchAndUnserve v1beta1", "error unservedWithoutDeprecation v1beta1", "warning versionUnserved v1beta1"}},
		{name: "unservedWithoutDeprecation",
			old: crd(nil, "v1beta1:served", "v1:served,storage"), new: crd(nil, "v1beta1", "v1:served,storage"), stored: []string{"v1"},
			want: []string{"error unservedWithoutDeprecation v1beta1", "warning versionUnserved v1beta1"}},
		{name: "blocking a deprecated version is the next step",
			old: crd(nil, "v1beta1:served,deprecated", "v1:served,storage"), new: crd(nil, "v1beta1:deprecated", "v1:served,storage"), stored: []string{"v1"},
			want: []string{"warning versionUnserved v1beta1"}},
		{name: "storageSwitchMayLoseData: the new storage schema lacks a field",
			old: withSchema(withSchema(crd(nil, "v1beta1:served,storage", "v1:served"), "v1beta1", "legacy", "host"), "v1", "host"),
			new: withSchema(withSchema(crd(nil, "v1beta1:served,deprecated", "v1:served,storage"), "v1beta1", "legacy", "host"), "v1", "host"), stored: []string{"v1beta1"},
			want: []string{"warning versionDeprecated v1beta1", "error storageSwitchMayLoseData v1beta1"}},
		{name: "schema: a field removed from a version that stays served",
			old: withSchema(crd(nil, "v1:served,storage"), "v1", "legacy", "host"), new: withSchema(crd(nil, "v1:served,storage"), "v1", "host"), stored: []string{"v1"},
			want: []string{"error fieldRemoved v1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.old != nil && tc.new != nil {
				tc.old.Name, tc.new.Name = "widgets.example.com", "widgets.example.com"
			}
			got := rules(CheckUpgrade(tc.old, tc.new, tc.stored))
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The rejection is worded as the API server words it, so a user who has
// seen the error recognises it.
func TestCheckUpgradeQuotesTheAPIServer(t *testing.T) {
	old := crd(nil, "v1alpha2:served,deprecated", "v1:served,storage")
	fs := CheckUpgrade(old, crd(nil, "v1:served,storage"), []string{"v1alpha2", "v1"})
	want := `status.storedVersions[0]: Invalid value: "v1alpha2": missing from spec.versions; v1alpha2 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1alpha2 and removes v1alpha2 from status.storedVersions`
	if len(fs) == 0 || !strings.HasSuffix(fs[0].Message, want) {
		t.Fatalf("finding %+v\nwant the message to end %q", fs, want)
	}
	if len(fs[0].Fix) != 2 || !sameStep(fs[0].Fix[0].Step, stages.MigrateStep("widgets.example.com")) {
		t.Errorf("fix %+v", fs[0].Fix)
	}
}

// A release that removes the live storage version with no release between
// that served both leaves no upstream manifest to bridge with: the fix
// takes the bridge on the cluster, each step a command of the plugin.
func TestRemovedStorageVersionFixBridgesOnTheCluster(t *testing.T) {
	for _, tc := range []struct {
		name  string
		old   *apiextensionsv1.CustomResourceDefinition
		first *lifecycle.Step
		steps int
	}{
		{"the new version is not served yet: added from the manifest", crd(nil, "v1alpha2:served,storage"), stages.IntroduceStep("widgets.example.com", "v1alpha3", "NEW_MANIFEST"), 5},
		{"the new version is served already: bridge first", crd(nil, "v1alpha2:served,storage", "v1alpha3:served"), stages.PromoteToStep("widgets.example.com", "v1alpha3", lifecycle.StageBridge), 4},
	} {
		fs := CheckUpgrade(tc.old, crd(nil, "v1alpha3:served,storage"), []string{"v1alpha2"})
		if len(fs) == 0 || fs[0].Rule != "storedVersionRemoved" {
			t.Fatalf("%s: %+v", tc.name, fs)
		}
		fix := fs[0].Fix
		if len(fix) != tc.steps || !sameStep(fix[0].Step, tc.first) || !sameStep(fix[len(fix)-2].Step, stages.MigrateStep("widgets.example.com")) {
			t.Errorf("%s: fix %+v", tc.name, fix)
		}
	}
}

// named is c under group, with kind and plural (both kept when empty), its
// name plural.group as the API server wants it.
func named(c *apiextensionsv1.CustomResourceDefinition, group, kind, plural string) *apiextensionsv1.CustomResourceDefinition {
	c.Spec.Group = group
	if kind != "" {
		c.Spec.Names.Kind = kind
	}
	if plural != "" {
		c.Spec.Names.Plural = plural
	}
	c.Name = c.Spec.Names.Plural + "." + group
	return c
}

// A CRD the old files have and the new ones lack is deleted, with every
// object of it, by an apply that prunes: an error, named as a rename when
// the new files have its kind and plural under another group.
func TestCheckFilesDroppedCRDs(t *testing.T) {
	widgets := func(group string) *apiextensionsv1.CustomResourceDefinition {
		return named(crd(nil, "v1:served,storage"), group, "", "")
	}
	gadgets := named(crd(nil, "v1:served,storage"), "example.com", "Gadget", "gadgets")
	type crds = []*apiextensionsv1.CustomResourceDefinition
	for _, tc := range []struct {
		name     string
		old, new crds
		want     []string // "severity rule crd [→ renamed to]"
	}{
		{name: "the same set", old: crds{widgets("example.com"), gadgets}, new: crds{widgets("example.com"), gadgets}, want: []string{}},
		{name: "a CRD new to the files has nothing to compare with", old: crds{widgets("example.com")}, new: crds{widgets("example.com"), gadgets}, want: []string{}},
		{name: "a CRD dropped", old: crds{widgets("example.com"), gadgets}, new: crds{widgets("example.com")},
			want: []string{"error crdDropped gadgets.example.com"}},
		{name: "every CRD dropped", old: crds{widgets("example.com"), gadgets}, new: crds{named(crd(nil, "v1:served,storage"), "example.com", "Sprocket", "sprockets")},
			want: []string{"error crdDropped widgets.example.com", "error crdDropped gadgets.example.com"}},
		{name: "the group renamed: the same kind and plural under another group", old: crds{widgets("example.com")}, new: crds{widgets("example.org")},
			want: []string{"error crdRenamed widgets.example.com → widgets.example.org"}},
		{name: "renamed beside a CRD kept", old: crds{gadgets, widgets("example.com")}, new: crds{gadgets, widgets("example.org")},
			want: []string{"error crdRenamed widgets.example.com → widgets.example.org"}},
		{name: "both groups before, the old one dropped now: still the objects stay behind", old: crds{widgets("example.com"), widgets("example.org")}, new: crds{widgets("example.org")},
			want: []string{"error crdRenamed widgets.example.com → widgets.example.org"}},
		{name: "the same kind under another plural is another resource", old: crds{widgets("example.com")}, new: crds{named(crd(nil, "v1:served,storage"), "example.org", "", "widgetses")},
			want: []string{"error crdDropped widgets.example.com"}},
		{name: "the same plural of another kind is another resource", old: crds{widgets("example.com")}, new: crds{named(crd(nil, "v1:served,storage"), "example.org", "Gizmo", "")},
			want: []string{"error crdDropped widgets.example.com"}},
		{name: "a CRD in two documents of the old files is dropped once", old: crds{widgets("example.com"), widgets("example.com")}, new: crds{gadgets},
			want: []string{"error crdDropped widgets.example.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := []string{}
			for _, f := range CheckFiles(tc.old, tc.new) {
				if f.Kind != results.FindingDropped {
					continue
				}
				s := fmt.Sprintf("%s %s %s", f.Severity, f.Rule, f.CRD)
				for _, n := range tc.new {
					if strings.Contains(f.Message, "which have "+n.Name+",") {
						s += " → " + n.Name
					}
				}
				got = append(got, s)
			}
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// What a dropped CRD's finding says: what a pruning apply does, what a
// plain one does, and for a rename that the objects stay behind, with the
// steps that move them; on a cluster, how many objects it has.
func TestDroppedSaysWhatIsLost(t *testing.T) {
	old := named(crd(nil, "v1beta1:served", "v1:served,storage"), "example.com", "", "")
	to := named(crd(nil, "v1:served,storage"), "example.org", "", "")
	for _, tc := range []struct {
		name     string
		to       *apiextensionsv1.CustomResourceDefinition
		live     *DroppedLive
		severity lifecycle.Severity
		rule     string
		message  []string
		fix      []string // each step contains its string, in order
	}{
		{name: "from files, dropped", live: nil, severity: lifecycle.SeverityError, rule: "crdDropped",
			message: []string{"widgets.example.com is in the old manifests and not in the new manifests", "an apply that prunes (Argo CD or Flux with pruning, kubectl apply --prune) deletes widgets.example.com and, with it, every object of it", "a plain kubectl apply leaves it"},
			fix:     []string{"keep widgets.example.com in the manifests while any object of it is to stay", "delete its objects first (kubectl delete widgets.example.com --all -A"}},
		{name: "from files, renamed", to: to, severity: lifecycle.SeverityError, rule: "crdRenamed",
			message: []string{"not in the new manifests, which have widgets.example.org, the same kind (Widget, plural widgets) under group example.org", "objects do not move between groups", "deletes widgets.example.com and, with it, every object of it", "a plain kubectl apply leaves it beside widgets.example.org"},
			fix:     []string{"keep widgets.example.com in the manifests beside widgets.example.org until its objects are moved", "create each object again under example.org (apiVersion: example.org/v1, kind Widget", "delete the objects of widgets.example.com"}},
		{name: "on a cluster, renamed, with objects", to: to, live: &DroppedLive{Counted: true, Count: 12, SameSource: "Helm release web in default"}, severity: lifecycle.SeverityError, rule: "crdRenamed",
			message: []string{"widgets.example.com is on the cluster with 12 objects and not in the new manifests", "a group rename (both from Helm release web in default), and objects do not move between groups", "deletes widgets.example.com and, with it, all 12 objects of it"},
			fix:     []string{"keep widgets.example.com in the manifests beside widgets.example.org", "create each object again under example.org", "delete the objects"}},
		{name: "on a cluster, one object", to: to, live: &DroppedLive{Counted: true, Count: 1, SameSource: "Helm chart web"}, severity: lifecycle.SeverityError, rule: "crdRenamed",
			message: []string{"is on the cluster with 1 object and", "deletes widgets.example.com and, with it, its 1 object"}},
		{name: "on a cluster, more than the API server counted", to: to, live: &DroppedLive{Counted: true, Count: 1, AtLeast: true, SameSource: "Helm chart web"}, severity: lifecycle.SeverityError, rule: "crdRenamed",
			message: []string{"is on the cluster with objects and", "every object of it"}},
		{name: "on a cluster, objects not countable: as if it had some", to: to, live: &DroppedLive{Why: "forbidden", SameSource: "Helm chart web"}, severity: lifecycle.SeverityError, rule: "crdRenamed",
			message: []string{"is on the cluster (its objects could not be counted: forbidden) and", "every object of it"}},
		{name: "on a cluster, no object: nothing is lost", to: to, live: &DroppedLive{Counted: true, SameSource: "Helm chart web"}, severity: lifecycle.SeverityWarning, rule: "crdRenamed",
			message: []string{"is on the cluster with no object", "a group rename (both from Helm chart web). Nothing is lost: an apply that prunes", "deletes widgets.example.com; a plain kubectl apply leaves it beside widgets.example.org"},
			fix:     []string{"move the clients and controllers of example.com to example.org"}},
		{name: "on a cluster, nothing tells the same source applied it: a warning", to: to, live: &DroppedLive{Counted: true, Count: 12}, severity: lifecycle.SeverityWarning, rule: "crdRenamed",
			message: []string{"is on the cluster with 12 objects", "if they replace it (nothing tells: no Helm release, Argo CD application, Flux label, chart or part-of label in common), a group rename, and objects do not move between groups", "all 12 objects of it"},
			fix:     []string{"keep widgets.example.com in the manifests beside widgets.example.org", "create each object again", "delete the objects"}},
		{name: "on a cluster, nothing tells, no object: a note", to: to, live: &DroppedLive{Counted: true}, severity: lifecycle.SeverityNote, rule: "crdRenamed",
			message: []string{"is on the cluster with no object", "if they replace it", "Nothing is lost"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Dropped(old, tc.to, tc.live)
			if f.Severity != tc.severity || f.Rule != tc.rule || f.Kind != results.FindingDropped || f.CRD != "widgets.example.com" || f.Version != "" {
				t.Errorf("got %s %s %s %s %q", f.Severity, f.Kind, f.Rule, f.CRD, f.Version)
			}
			for _, m := range tc.message {
				if !strings.Contains(f.Message, m) {
					t.Errorf("message %q\nlacks %q", f.Message, m)
				}
			}
			if tc.fix == nil {
				return
			}
			if len(f.Fix) != len(tc.fix) {
				t.Fatalf("fix %+v, want %d steps", f.Fix, len(tc.fix))
			}
			for i, want := range tc.fix {
				if !strings.Contains(f.Fix[i].Text, want) {
					t.Errorf("fix %d: %q\nlacks %q", i+1, f.Fix[i].Text, want)
				}
			}
		})
	}
}

// Whether what applies the new manifests applied a live CRD too: the
// marks of the tool whose apply prunes first, then the project's.
func TestSameSource(t *testing.T) {
	with := func(labels, annotations map[string]string) *apiextensionsv1.CustomResourceDefinition {
		c := crd(nil, "v1:served,storage")
		c.Labels, c.Annotations = labels, annotations
		return c
	}
	helm := func(release, ns string) map[string]string {
		return map[string]string{"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": ns}
	}
	type m = map[string]string
	for _, tc := range []struct {
		name      string
		live      *apiextensionsv1.CustomResourceDefinition
		refs      []*apiextensionsv1.CustomResourceDefinition
		evidence  string
		unrelated bool
	}{
		{name: "no marks anywhere", live: with(nil, nil), refs: []*apiextensionsv1.CustomResourceDefinition{with(nil, nil)}},
		{name: "the same Helm release as a live sibling", live: with(nil, helm("web", "apps")),
			refs: []*apiextensionsv1.CustomResourceDefinition{with(nil, nil), with(nil, helm("web", "apps"))}, evidence: "Helm release web in apps"},
		{name: "another Helm release of the same chart: two sources", live: with(m{"helm.sh/chart": "web-1.2.0"}, helm("web-a", "apps")),
			refs: []*apiextensionsv1.CustomResourceDefinition{with(m{"helm.sh/chart": "web-1.3.0"}, helm("web-b", "apps"))}, unrelated: true},
		{name: "the same release name in another namespace", live: with(nil, helm("web", "a")), refs: []*apiextensionsv1.CustomResourceDefinition{with(nil, helm("web", "b"))}, unrelated: true},
		{name: "the same Argo CD application", live: with(nil, m{"argocd.argoproj.io/tracking-id": "web:apiextensions.k8s.io/CustomResourceDefinition:/widgets.example.com"}),
			refs: []*apiextensionsv1.CustomResourceDefinition{with(nil, m{"argocd.argoproj.io/tracking-id": "web:apiextensions.k8s.io/CustomResourceDefinition:/gadgets.example.com"})}, evidence: "Argo CD application web"},
		{name: "another Argo CD application", live: with(nil, m{"argocd.argoproj.io/tracking-id": "istio:apiextensions.k8s.io/CustomResourceDefinition:/gateways.networking.istio.io"}),
			refs: []*apiextensionsv1.CustomResourceDefinition{with(nil, m{"argocd.argoproj.io/tracking-id": "gateway-api:apiextensions.k8s.io/CustomResourceDefinition:/httproutes.gateway.networking.k8s.io"})}, unrelated: true},
		{name: "the same Flux Kustomization", live: with(m{"kustomize.toolkit.fluxcd.io/name": "infra", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, nil),
			refs: []*apiextensionsv1.CustomResourceDefinition{with(m{"kustomize.toolkit.fluxcd.io/name": "infra", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, nil)}, evidence: "Flux Kustomization infra in flux-system"},
		{name: "a chart rendered by helm template: the chart name, whatever its version", live: with(m{"helm.sh/chart": "web-1.2.0"}, helm("web", "apps")),
			refs: []*apiextensionsv1.CustomResourceDefinition{with(m{"helm.sh/chart": "web-2.0.0-rc.1"}, nil)}, evidence: "Helm chart web"},
		{name: "another chart", live: with(m{"helm.sh/chart": "istio-base-1.20.0"}, nil), refs: []*apiextensionsv1.CustomResourceDefinition{with(m{"helm.sh/chart": "gateway-api-v1.1.0"}, nil)}, unrelated: true},
		{name: "the same part-of", live: with(m{"app.kubernetes.io/part-of": "web"}, nil), refs: []*apiextensionsv1.CustomResourceDefinition{with(m{"app.kubernetes.io/part-of": "web"}, nil)}, evidence: "label app.kubernetes.io/part-of=web"},
		{name: "a mark on one side only tells nothing", live: with(m{"app.kubernetes.io/part-of": "web"}, helm("web", "apps")), refs: []*apiextensionsv1.CustomResourceDefinition{with(nil, nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evidence, unrelated := SameSource(tc.live, tc.refs)
			if evidence != tc.evidence || unrelated != tc.unrelated {
				t.Errorf("got %q, unrelated %v; want %q, %v", evidence, unrelated, tc.evidence, tc.unrelated)
			}
		})
	}
}

// A manifest past what client-side apply can keep in its annotation: an
// error where the live CRD was applied client-side, else a warning (only
// a client-side apply fails), and nothing for a manifest that fits.
func TestLastAppliedTooLong(t *testing.T) {
	small := crd([]string{"v1"}, "v1:served,storage")
	big := small.DeepCopy()
	big.Spec.Versions[0].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Description: strings.Repeat("x", 300<<10)}}
	applied := small.DeepCopy()
	applied.Annotations = map[string]string{LastAppliedAnnotation: "{}"}
	for _, tc := range []struct {
		name     string
		old, new *apiextensionsv1.CustomResourceDefinition
		want     lifecycle.Severity
	}{
		{"fits", applied, small, ""},
		{"past the limit, applied client-side", applied, big, lifecycle.SeverityError},
		{"past the limit, applied otherwise", small, big, lifecycle.SeverityWarning},
		{"past the limit, not created yet", nil, big, lifecycle.SeverityWarning},
		{"fits, not created yet", nil, small, ""},
	} {
		// CheckUpgrade, as a CRD the cluster does not have yet meets no
		// other rule.
		got := CheckUpgrade(tc.old, tc.new, []string{"v1"})
		got = slices.DeleteFunc(got, func(f results.Finding) bool { return f.Rule != "lastAppliedTooLong" })
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: %+v", tc.name, got)
		case tc.want != "" && (len(got) != 1 || got[0].Severity != tc.want):
			t.Errorf("%s: %+v, want one %s", tc.name, got, tc.want)
		}
	}
}
