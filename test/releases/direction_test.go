package releases

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// Crossplane v2.0.0 deprecates both versions of its old Usage kind, the
// older one (v1alpha1) storage: the kind is retiring. status's next step
// must not stop serving v1beta1 while v1alpha1 stays served, as it once did
// ("promote ... v1alpha1 --to blocked (stop serving v1beta1)"). No API
// server needed: the CRD as applied, with the storedVersions one gets.
func TestCrossplaneUsageIsRetiringNotBlocked(t *testing.T) {
	root := moduleDir(t, "github.com/crossplane/crossplane/v2", "v2.0.0")
	found, err := manifest.ReadCRDs(t.Context(), []string{filepath.Join(root, "cluster/crds/apiextensions.crossplane.io_usages.yaml")}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(found.CRDs) != 1 {
		t.Fatalf("%d CRDs in the file, want 1", len(found.CRDs))
	}
	crd := found.CRDs[0]
	crd.Status.StoredVersions = []string{stages.StorageVersion(crd)}
	if v := stages.SpecVersion(crd, "v1beta1"); stages.StorageVersion(crd) != "v1alpha1" || v == nil || !v.Served || !v.Deprecated {
		t.Fatalf("the release changed: storage %s, v1beta1 %+v; this test needs v1alpha1 storage and v1beta1 served and deprecated",
			stages.StorageVersion(crd), v)
	}

	a := stages.Assess(crd)
	next := a.Next
	if s := next.Step; s != nil && s.Op == lifecycle.OpPromote {
		if s.To == lifecycle.StageBlocked || s.To == lifecycle.StageRemoved {
			t.Fatalf("next step %s %+v (%s) stops serving a version newer than storage", next.Action, s, next.Reason)
		}
		if p, err := stages.PlanPromote(crd, s.Version, s.To, stages.PromoteOptions{}); err == nil && !stages.SpecVersion(p.After, "v1beta1").Served {
			t.Fatalf("next step %+v stops serving v1beta1", s)
		}
	}
	retiring := false
	for _, p := range a.Problems {
		retiring = retiring || p.Version == "v1alpha1" && strings.Contains(p.Message, "Usage is retiring")
	}
	if next.Action != lifecycle.ActionNone || !retiring {
		t.Errorf("next %s (%s), problems %+v: want none, and the kind said to be retiring", next.Action, next.Reason, a.Problems)
	}
}
