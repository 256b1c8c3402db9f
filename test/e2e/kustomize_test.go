package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// kustomizeTree is a kustomization that patches its Widgets by version: a
// JSON 6902 patch (a file of its own) by target, and an inline
// strategic-merge patch.
var kustomizeTree = map[string]string{
	"kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- widgets.yaml
patches:
- target:
    group: conv.example.com
    version: v1beta1 # the version the objects are at
    kind: Widget
    name: large
  path: large-size.yaml
- patch: |-
    apiVersion: conv.example.com/v1beta1
    kind: Widget
    metadata:
      name: small
      namespace: default
    spec:
      size: 7
`,
	"large-size.yaml": `- op: replace
  path: /spec/size
  value: 5
`,
	"widgets.yaml": `apiVersion: conv.example.com/v1beta1
kind: Widget
metadata:
  name: small
  namespace: default
spec:
  size: 1
---
apiVersion: conv.example.com/v1beta1
kind: Widget
metadata:
  name: large
  namespace: default
spec:
  size: 10
`,
}

func kustomize(t *testing.T, dir string) string {
	t.Helper()
	return offlineRun(t, "", "kubectl", "kustomize", dir).mustCode(t, 0).stdout
}

// The kustomization moves with the objects: kubectl kustomize builds the
// same objects after convert as before, at the new version (left at
// v1beta1, the 6902 patch silently stops applying and the strategic-merge
// patch fails the build).
func TestConvertMovesTheKustomizationWithItsObjects(t *testing.T) {
	crd := withCRDFile(t)
	dir := writeTree(t, kustomizeTree)
	before := kustomize(t, dir)
	contains(t, "build before", before, "size: 5", "size: 7")

	r := offline(t, "convert", "-f", dir, "--to", "v1", "--crd-file", crd, "--in-place").mustCode(t, 0)
	contains(t, "convert", r.stdout, "2 converted to v1",
		"kustomization.yaml:1: patches[0].target.version v1beta1 → v1", "kustomization.yaml:1: patches[1].patch apiVersion v1beta1 → v1")
	if after, want := kustomize(t, dir), strings.ReplaceAll(before, "conv.example.com/v1beta1", "conv.example.com/v1"); after != want {
		t.Fatalf("kubectl kustomize after convert:\n%s\nwant:\n%s", after, want)
	}
	got := readTree(t, dir)["kustomization.yaml"]
	for _, c := range changedLines(t, kustomizeTree["kustomization.yaml"], got) {
		if strings.Replace(c[0], "v1beta1", "v1", 1) != c[1] {
			t.Errorf("kustomization.yaml: a line other than a version changed: %q -> %q", c[0], c[1])
		}
	}
}

// A selector that would pick objects on both sides (one stays: it would
// lose a field) holds back the objects it selects, each refused with the
// reason; the tree is left as it was and still builds. --accept-loss,
// which the refusal advises, moves them all, the selector with them.
func TestConvertRefusesWhatAKustomizationWouldSplit(t *testing.T) {
	crd := withCRDFile(t)
	files := map[string]string{
		"kustomization.yaml": `resources:
- widgets.yaml
patches:
- target:
    version: v1beta1
    kind: Widget
  patch: |-
    - op: add
      path: /metadata/labels
      value: {tier: shop}
`,
		"widgets.yaml": kustomizeTree["widgets.yaml"] + `---
apiVersion: conv.example.com/v1beta1
kind: Widget
metadata:
  name: old
  namespace: default
spec:
  legacy: from the old days
`,
	}
	dir := writeTree(t, files)
	before := kustomize(t, dir)

	r := offline(t, "convert", "-f", dir, "--to", "v1", "--crd-file", crd, "--in-place").mustCode(t, 3)
	contains(t, "refused", r.stdout, "3 refused", "refused: "+filepath.Join(dir, "kustomization.yaml")+":1 patches[0].target.version selects it at v1beta1 with default/old, which stays at v1beta1",
		"spec.legacy", "--accept-loss")
	if got := readTree(t, dir); got["widgets.yaml"] != files["widgets.yaml"] || got["kustomization.yaml"] != files["kustomization.yaml"] {
		t.Fatal("files changed though every object was refused")
	}

	r = offline(t, "convert", "-f", dir, "--to", "v1", "--crd-file", crd, "--in-place", "--accept-loss").mustCode(t, 0)
	contains(t, "accepted", r.stdout, "3 converted to v1", "patches[0].target.version v1beta1 → v1")
	// The same objects, at v1, the lost field gone ({} as the API server
	// keeps it), every one patched.
	want := strings.ReplaceAll(strings.Replace(before, "spec:\n  legacy: from the old days\n", "spec: {}\n", 1), "conv.example.com/v1beta1", "conv.example.com/v1")
	if after := kustomize(t, dir); after != want || strings.Count(after, "tier: shop") != 3 {
		t.Fatalf("kubectl kustomize after convert --accept-loss:\n%s\nwant:\n%s", after, want)
	}
}
