package crdmigrator

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func crd(storage string, stored []string, conds ...apiextensionsv1.CustomResourceDefinitionCondition) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{}
	c.Name = "widgets.example.com"
	for _, v := range []string{"v1beta1", "v1"} {
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: v == storage})
	}
	c.Status.StoredVersions = stored
	c.Status.Conditions = conds
	return c
}

var migrating = apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.StorageMigrating, Status: apiextensionsv1.ConditionTrue, Reason: "MigrationRunning", Message: "svm-1"}

func TestDecide(t *testing.T) {
	pending := crd("v1", []string{"v1beta1", "v1"})
	for _, tc := range []struct {
		name         string
		crd          *apiextensionsv1.CustomResourceDefinition
		skip         []Phase
		verb         verb
		prune, clean bool
		reason       string
	}{
		{"pending: every phase", pending, nil, doMigrate, true, true, "re-storing every object"},
		{"pending, prune skipped", pending, []Phase{PhasePrune}, doMigrate, false, true, "(prune skipped)"},
		{"pending, cleanup skipped", pending, []Phase{PhaseManagedFields}, doMigrate, true, false, "re-storing"},
		// A prune without the re-store's proof is never decided.
		{"pending, re-store skipped", pending, []Phase{PhaseRestore}, doClean, false, true, "a prune without it would be unproven"},
		{"pending, re-store and cleanup skipped", pending, []Phase{PhaseRestore, PhaseManagedFields}, doNothing, false, false, "unproven"},
		{"the cluster's migrator at work", crd("v1", []string{"v1beta1", "v1"}, migrating), nil, doDefer, false, false, "StorageMigrating=True, MigrationRunning: svm-1"},
		{"nothing pending", crd("v1", []string{"v1"}), nil, doClean, false, true, "holds only the storage version v1"},
		{"nothing pending, cleanup skipped", crd("v1", []string{"v1"}), []Phase{PhaseManagedFields}, doNothing, false, false, "cleanup is skipped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decide(tc.crd, enabled(tc.skip))
			if d.verb != tc.verb || d.prune != tc.prune || d.clean != tc.clean || !strings.Contains(d.reason, tc.reason) {
				t.Errorf("decide = %+v, want %s prune=%v clean=%v with %q", d, tc.verb, tc.prune, tc.clean, tc.reason)
			}
		})
	}
}

func TestChanged(t *testing.T) {
	gen := func(c *apiextensionsv1.CustomResourceDefinition, g int64) *apiextensionsv1.CustomResourceDefinition {
		c.Generation = g
		return c
	}
	for _, tc := range []struct {
		name     string
		old, cur *apiextensionsv1.CustomResourceDefinition
		want     string
	}{
		{"storage switch", gen(crd("v1beta1", []string{"v1beta1"}), 1), gen(crd("v1", []string{"v1beta1", "v1"}), 2), "storage version v1beta1 → v1"},
		{"another spec change", gen(crd("v1", []string{"v1"}), 2), gen(crd("v1", []string{"v1"}), 3), "generation 2 → 3"},
		{"the cluster's migration ended", crd("v1", []string{"v1beta1", "v1"}, migrating), crd("v1", []string{"v1"}), "migrator is done"},
		{"status only", crd("v1", []string{"v1beta1", "v1"}), crd("v1", []string{"v1"}), ""},
		{"the cluster's migration began", crd("v1", []string{"v1beta1", "v1"}), crd("v1", []string{"v1beta1", "v1"}, migrating), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := changed(tc.old, tc.cur)
			if ok != (tc.want != "") || !strings.Contains(why, tc.want) {
				t.Errorf("changed = %v %q, want %q", ok, why, tc.want)
			}
		})
	}
}
