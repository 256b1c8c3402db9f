package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"errors"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// A multi-document file as operator repositories have them: comments,
// quoting, un-indented sequences, another kind of object around the CRD.
const original = `# Deployed by the widgets chart.
apiVersion: v1
kind: ConfigMap
metadata:
  name: widgets-config
data:
  mode: "strict"   # keep
---
# The Widget CRD.
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    plural: widgets
  scope: Namespaced
  versions:
  # the old version
  - name: v1beta1
    served: true   # served until 2027
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
  # the new version
  - name: v1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
apiVersion: v1
kind: Service
metadata:
  name: widgets-webhook
`

func load(t *testing.T, content string) (*File, CRD) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "widgets.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	crds, err := ReadEditable(t.Context(), path)
	if err != nil || len(crds) != 1 {
		t.Fatalf("CRDs = %v, %v", crds, err)
	}
	return crds[0].File, crds[0]
}

// step plans the next offline step on the file's CRD and applies it.
func step(t *testing.T, content string, plan func(CRD) (*lifecycle.Plan, error)) string {
	t.Helper()
	f, crd := load(t, content)
	p, err := plan(crd)
	if err != nil {
		t.Fatal(err)
	}
	if err := crd.Apply(p); err != nil {
		t.Fatal(err)
	}
	if err := WriteFiles(t.Context(), []*File{f}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(f.Path)
	return string(raw)
}

func promote(to lifecycle.Stage, warning string) func(CRD) (*lifecycle.Plan, error) {
	return func(c CRD) (*lifecycle.Plan, error) {
		return stages.PlanPromote(c.Obj, "v1", to, stages.PromoteOptions{Offline: true, DeprecationWarning: warning})
	}
}

func rollback(c CRD) (*lifecycle.Plan, error) {
	return stages.PlanRollback(c.Obj, "v1", stages.RollbackOptions{Offline: true})
}

// withoutRecord is a file after steps with the record of them taken out:
// the annotations the first step added, holding steps steps.
func withoutRecord(t *testing.T, content string, steps int) string {
	t.Helper()
	_, crd := load(t, content)
	if n := len(stages.Steps(crd.Obj)); n != steps {
		t.Fatalf("%d steps recorded in the file, want %d:\n%s", n, steps, content)
	}
	start := strings.Index(content, "  annotations:\n    "+stages.StepsAnnotation+": '")
	if start < 0 {
		t.Fatalf("no record in the file:\n%s", content)
	}
	end := start + len("  annotations:\n")
	end += strings.Index(content[end:], "\n") + 1
	return content[:start] + content[end:]
}

func TestOfflineWalkKeepsEverythingElse(t *testing.T) {
	deprecated := step(t, original, promote(lifecycle.StageDeprecated, ""))
	wantDeprecated := strings.NewReplacer(
		"    served: true   # served until 2027\n    storage: true\n",
		"    served: true   # served until 2027\n    storage: false\n    deprecated: true\n    deprecationWarning: \"example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget\"\n",
		"  - name: v1\n    served: true\n    storage: false\n",
		"  - name: v1\n    served: true\n    storage: true\n",
	).Replace(original)
	if withoutRecord(t, deprecated, 1) != wantDeprecated {
		t.Fatalf("deprecated:\n%s\nwant:\n%s", deprecated, wantDeprecated)
	}

	blocked := step(t, deprecated, promote("", ""))
	wantBlocked := strings.Replace(wantDeprecated, "served: true   # served until 2027", "served: false   # served until 2027", 1)
	if withoutRecord(t, blocked, 2) != wantBlocked {
		t.Fatalf("blocked:\n%s\nwant:\n%s", blocked, wantBlocked)
	}
	// Each step's rollback gives back the file as it was before the step.
	if back := step(t, blocked, rollback); back != deprecated {
		t.Fatalf("rollback of blocked:\n%s\nwant:\n%s", back, deprecated)
	}
	if back := step(t, deprecated, rollback); back != original {
		t.Fatalf("rollback of deprecated:\n%s\nwant:\n%s", back, original)
	}

	// A file has no storedVersions: the cluster's migrate and prune are its
	// guard, so removal edits the file.
	removed := step(t, blocked, promote("", ""))
	start := strings.Index(wantBlocked, "  # the old version\n")
	end := strings.Index(wantBlocked, "  # the new version\n")
	wantRemoved := wantBlocked[:start] + wantBlocked[end:]
	if withoutRecord(t, removed, 3) != wantRemoved {
		t.Fatalf("removed:\n%s\nwant:\n%s", removed, wantRemoved)
	}
}

func TestOfflineRollbackRemovesWarning(t *testing.T) {
	deprecated := step(t, original, promote(lifecycle.StageDeprecated, "it's gone in 2027"))
	if !strings.Contains(deprecated, `deprecationWarning: "it's gone in 2027"`) {
		t.Fatalf("own warning not written:\n%s", deprecated)
	}
	back := step(t, deprecated, rollback)
	if back != original {
		t.Fatalf("rollback did not restore the file:\n%s\nwant:\n%s", back, original)
	}
}

func TestOfflineRefusesWhatNeedsTheCluster(t *testing.T) {
	f, crd := load(t, original)
	p, err := stages.PlanPromote(crd.Obj, "v1", lifecycle.StageBridge, stages.PromoteOptions{Offline: true})
	if err == nil || !strings.Contains(err.Error(), "the next stage is deprecated, not bridge") {
		t.Fatalf("offline bridge: plan %v, err %v", p, err)
	}
	manifest := *crd.Obj.DeepCopy()
	manifest.Spec.Versions = append(manifest.Spec.Versions, manifest.Spec.Versions[1])
	manifest.Spec.Versions[2].Name = "v2"
	p, err = stages.PlanPromote(crd.Obj, "v2", "", stages.PromoteOptions{Offline: true, Manifest: &manifest})
	if err != nil {
		t.Fatal(err)
	}
	if err := crd.Apply(p); !errors.Is(err, ErrNotOffline) || !strings.Contains(err.Error(), "add version v2") {
		t.Fatalf("offline introduce: %v", err)
	}
	if string(f.Bytes()) != original {
		t.Errorf("a refused edit changed the file")
	}
}

// A file whose step record does not parse (edited by hand, mangled by a
// template): a step forward would write its own record over those lines,
// and the rollback after it could not give them back. It is refused, and
// the file is left as it was.
func TestOfflineStepRefusesToOverwriteARecordThatDoesNotParse(t *testing.T) {
	for _, value := range []string{"not json", "", "null", "{}", "[]", "[{}]", `[{"foo":1}]`, `[{"version":"v1"}]`, `[1]`} {
		quoted := "'" + strings.ReplaceAll(value, "'", "''") + "'"
		mangled := strings.Replace(original, "  name: widgets.example.com\n",
			"  name: widgets.example.com\n  annotations:\n    "+stages.StepsAnnotation+": "+quoted+"\n", 1)
		f, crd := load(t, mangled)
		p, err := promote(lifecycle.StageDeprecated, "")(crd)
		if err != nil {
			t.Fatal(err)
		}
		if err := crd.Apply(p); err == nil || !strings.Contains(err.Error(), "does not parse") {
			t.Errorf("promote of a file whose record is %s: %v, want it refused", quoted, err)
		}
		if string(f.Bytes()) != mangled {
			t.Errorf("a refused step changed the file:\n%s", f.Bytes())
		}
	}
}
