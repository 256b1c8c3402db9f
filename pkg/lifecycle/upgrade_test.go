package lifecycle

import (
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// rules lists the findings as "rule version" strings, in order.
func rules(fs []Finding) []string {
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
		SpecVersion(c, v).Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
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
			want: []string{"warning versionRemoved v1alpha1"}},
		{name: "from files, the old storage version counts as stored",
			old: crd(nil, "v1alpha1:deprecated", "v1:served,storage"), new: crd(nil, "v1alpha1:deprecated", "v1:served"), stored: nil,
			want: []string{}},
		{name: "from files, removing a version never storage there may still be refused by a cluster that stored at it",
			old: crd(nil, "v1alpha2", "v1:served,storage"), new: crd(nil, "v1:served,storage"), stored: nil,
			want: []string{"warning removedVersionMayBeStored v1alpha2", "warning versionRemoved v1alpha2"}},
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
	if len(fs[0].Fix) != 2 || !sameStep(fs[0].Fix[0].Step, Migrate("widgets.example.com")) {
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
		first *Step
		steps int
	}{
		{"the new version is not served yet: added from the manifest", crd(nil, "v1alpha2:served,storage"), Introduce("widgets.example.com", "v1alpha3", "NEW_MANIFEST"), 5},
		{"the new version is served already: bridge first", crd(nil, "v1alpha2:served,storage", "v1alpha3:served"), PromoteTo("widgets.example.com", "v1alpha3", StageBridge), 4},
	} {
		fs := CheckUpgrade(tc.old, crd(nil, "v1alpha3:served,storage"), []string{"v1alpha2"})
		if len(fs) == 0 || fs[0].Rule != "storedVersionRemoved" {
			t.Fatalf("%s: %+v", tc.name, fs)
		}
		fix := fs[0].Fix
		if len(fix) != tc.steps || !sameStep(fix[0].Step, tc.first) || !sameStep(fix[len(fix)-2].Step, Migrate("widgets.example.com")) {
			t.Errorf("%s: fix %+v", tc.name, fix)
		}
	}
}
