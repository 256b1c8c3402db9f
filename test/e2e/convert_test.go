package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/convwebhook"
)

// widgetsCRD is a CRD with conversion None and closed schemas: v1beta1
// (storage) has spec.size and spec.legacy, v1 spec.size and spec.color, so
// an object with spec.legacy loses it at v1.
const widgetsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.conv.example.com
spec:
  group: conv.example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              legacy: {type: string}
  - name: v1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              color: {type: string}
`

// kustomizeBase is a kustomize-style tree: other documents, comments,
// quoting and a nested directory that only -R reaches.
var kustomizeBase = map[string]string{
	"kustomization.yaml": `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- widgets.yaml
- more/
`,
	"widgets.yaml": `# The widgets of the shop.
apiVersion: conv.example.com/v1beta1 # bumped by hand until now
kind: Widget
metadata:
  name: small   # the first
  namespace: default
spec:
  size: 1
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: widget-settings
  namespace: default
data: {color: "blue"}   # flow style, left alone
---
apiVersion: "conv.example.com/v1beta1"
kind: Widget
metadata:
  name: large
  namespace: default
spec:
  # a big one
  size: 10
`,
	"more/widget.yml": `apiVersion: conv.example.com/v1beta1
kind: Widget
metadata:
  name: nested
  namespace: default
spec:
  size: 3
`,
	"more/chart-template.yaml": `apiVersion: conv.example.com/{{ .Values.version }}
kind: Widget
metadata:
  name: {{ .Release.Name }}
`,
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(raw)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// changedLines lists the lines of before that after changed, paired, for
// files of the same number of lines.
func changedLines(t *testing.T, before, after string) [][2]string {
	t.Helper()
	b, a := strings.Split(before, "\n"), strings.Split(after, "\n")
	if len(a) != len(b) {
		t.Fatalf("line count changed %d -> %d:\n%s", len(b), len(a), after)
	}
	var out [][2]string
	for i := range b {
		if a[i] != b[i] {
			out = append(out, [2]string{b[i], a[i]})
		}
	}
	return out
}

func TestConvertKustomizeDirectoryInPlace(t *testing.T) {
	e := newEnv(t, 0)
	e.applyWidgetsCRD(t)
	dir := writeTree(t, kustomizeBase)

	r := e.plugin("convert", "-f", dir, "-R", "--to", "v1", "--in-place").mustCode(t, 0)
	contains(t, "convert", r.stdout, "3 converted to v1", "small", "large", "nested")
	contains(t, "template warning", r.stderr, "chart-template.yaml is a template", "skipped")

	after := readTree(t, dir)
	for name, before := range kustomizeBase {
		changes := changedLines(t, before, after[name])
		for _, c := range changes {
			if !strings.Contains(c[0], "apiVersion: ") || !strings.Contains(c[1], "conv.example.com/v1") || strings.Replace(c[0], "v1beta1", "v1", 1) != c[1] {
				t.Errorf("%s: a line other than apiVersion's changed: %q -> %q", name, c[0], c[1])
			}
		}
		want := map[string]int{"widgets.yaml": 2, "more/widget.yml": 1}[name]
		if len(changes) != want {
			t.Errorf("%s: %d lines changed, want %d", name, len(changes), want)
		}
	}
	// The API server takes what was written, at v1 (the sandbox serves
	// no ConfigMaps: the Widgets go alone).
	var widgets []string
	for _, doc := range strings.Split(after["widgets.yaml"], "\n---\n") {
		if !strings.Contains(doc, "kind: ConfigMap") {
			widgets = append(widgets, doc)
		}
	}
	e.kubectlIn(strings.Join(append(widgets, after["more/widget.yml"]), "\n---\n"), "apply", "--dry-run=server", "-f", "-").mustCode(t, 0)

	// Run again: nothing left to do.
	r = e.plugin("convert", "-f", dir, "-R", "--to", "v1", "--in-place").mustCode(t, 0)
	contains(t, "again", r.stdout, "3 already at v1")
}

func TestConvertRefusesALossyConversionNamingTheFields(t *testing.T) {
	e := newEnv(t, 0)
	e.applyWidgetsCRD(t)
	files := map[string]string{"w.yaml": `apiVersion: conv.example.com/v1beta1
kind: Widget
metadata:
  name: keeps
spec:
  size: 2
---
apiVersion: conv.example.com/v1beta1
kind: Widget
metadata:
  name: loses
spec:
  size: 2
  legacy: "from the old days"
`}
	dir := writeTree(t, files)
	file := filepath.Join(dir, "w.yaml")

	r := e.plugin("convert", "-f", file, "--to", "v1", "--in-place").mustCode(t, 3)
	contains(t, "refused", r.stdout, "loses", "refused", "spec.legacy", `"from the old days"`, "--accept-loss")
	got := readTree(t, dir)["w.yaml"]
	if !strings.Contains(got, "name: keeps") || strings.Count(got, "conv.example.com/v1beta1") != 1 || !strings.Contains(got, "legacy: \"from the old days\"") {
		t.Fatalf("want keeps converted and loses left as it was:\n%s", got)
	}

	r = e.plugin("convert", "-f", file, "--to", "v1", "--in-place", "--accept-loss").mustCode(t, 0)
	contains(t, "accepted", r.stdout, "1 converted", "spec.legacy")
	got = readTree(t, dir)["w.yaml"]
	if strings.Contains(got, "legacy") || strings.Contains(got, "v1beta1") {
		t.Fatalf("want legacy dropped and every object at v1:\n%s", got)
	}
	e.kubectl("apply", "--dry-run=server", "--validate=strict", "-f", file).mustCode(t, 0)
}

func TestConvertStdinToStdout(t *testing.T) {
	e := newEnv(t, 0)
	e.applyWidgetsCRD(t)
	in := kustomizeBase["widgets.yaml"]
	r := e.kubectlIn(in, "crdversion", "convert", "-f", "-", "--to", "v1").mustCode(t, 0)
	if want := strings.ReplaceAll(in, "conv.example.com/v1beta1", "conv.example.com/v1"); r.stdout != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	contains(t, "summary on stderr", r.stderr, "2 converted to v1")

	// Offline, with the CRD from a file and no cluster at all.
	crdFile := filepath.Join(writeTree(t, map[string]string{"crd.yaml": widgetsCRD}), "crd.yaml")
	r = offlineIn(t, in, "convert", "-f", "-", "--to", "v1", "--crd-file", crdFile, "-o", "json").mustCode(t, 0)
	contains(t, "json", r.stdout, `"kind": "List"`, `"apiVersion": "conv.example.com/v1"`, `"kind": "ConfigMap"`)
}

// endpointsManifest holds two Endpoints at v1, in the form v1 has.
const endpointsManifest = `# endpoints of the shop
apiVersion: net.example.com/v1
kind: Endpoint
metadata:
  name: web
  namespace: default
  labels:
    app: shop
spec:
  hostPort: web.example.com:443 # public
---
apiVersion: net.example.com/v1
kind: Endpoint
metadata:
  name: db
  namespace: default
spec:
  hostPort: db.internal:5432
`

func TestConvertThroughTheConversionWebhook(t *testing.T) {
	e := newEnv(t, 0)
	wh := installEndpoints(t, e, 0)
	dir := writeTree(t, map[string]string{"ep.yaml": endpointsManifest})
	file := filepath.Join(dir, "ep.yaml")

	reviews := wh.Reviews()
	r := e.plugin("convert", "-f", file, "--to", "v2", "--in-place").mustCode(t, 0)
	contains(t, "webhook", r.stdout, "2 converted to v2")
	if wh.Reviews() == reviews {
		t.Fatal("the webhook was never called")
	}
	got := readTree(t, dir)["ep.yaml"]
	for _, want := range []string{"# endpoints of the shop", "apiVersion: net.example.com/v2", "host: web.example.com", `port: "443"`, "host: db.internal", `port: "5432"`, "app: shop"} {
		if !strings.Contains(got, want) {
			t.Errorf("converted file lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "hostPort") {
		t.Errorf("hostPort left in the v2 file:\n%s", got)
	}
	e.kubectl("apply", "--dry-run=server", "-f", file).mustCode(t, 0)

	// A converter that loses the port on the way back: refused.
	dir = writeTree(t, map[string]string{"ep.yaml": endpointsManifest})
	file = filepath.Join(dir, "ep.yaml")
	wh.SetMode(convwebhook.Lossy)
	r = e.plugin("convert", "-f", file, "--to", "v2", "--in-place").mustCode(t, 3)
	contains(t, "lossy webhook", r.stdout, "2 refused", "spec.hostPort", `"web.example.com:443"`)
	if got := readTree(t, dir)["ep.yaml"]; got != endpointsManifest {
		t.Fatalf("refused objects were written:\n%s", got)
	}

	// A converter that renames the objects: the API server would refuse
	// its answer, and nothing is written.
	wh.SetMode(convwebhook.Renames)
	r = e.plugin("convert", "-f", file, "--to", "v2", "--in-place").mustCode(t, 3)
	contains(t, "renaming webhook", r.stderr, "error: ", "default/web", "must have the same name", "nothing was converted or written")
	if got := readTree(t, dir)["ep.yaml"]; got != endpointsManifest {
		t.Fatalf("a file was written after a wrong answer:\n%s", got)
	}
}

func TestConvertBadInput(t *testing.T) {
	e := newEnv(t, 0)
	e.applyWidgetsCRD(t)
	dir := writeTree(t, map[string]string{"broken.yaml": "apiVersion: conv.example.com/v1beta1\nkind: Widget\nmetadata: [unclosed\n"})
	oneError(t, e.plugin("convert", "-f", dir, "--to", "v1", "--in-place").mustCode(t, 1), "broken.yaml")
	oneError(t, e.plugin("convert", "-f", filepath.Join(dir, "nope.yaml"), "--to", "v1").mustCode(t, 1), `the path`, "does not exist")
	ok := writeTree(t, map[string]string{"w.yaml": kustomizeBase["more/widget.yml"]})
	oneError(t, e.plugin("convert", "-f", ok, "--to", "v9").mustCode(t, 1), "with version v9", "has v1beta1, v1")
	if got := readTree(t, ok)["w.yaml"]; got != kustomizeBase["more/widget.yml"] {
		t.Fatal("file changed on bad input")
	}
}

func TestPromoteLeavesAGitOpsCRDToItsManifest(t *testing.T) {
	e := newEnv(t, 0)
	e.applyWidgetsCRD(t)
	const name = "widgets.conv.example.com"
	e.kubectl("label", "crd", name, "argocd.argoproj.io/instance=shop").mustCode(t, 0)
	// Bridge (a check on the cluster) is taken live; deprecated is not.
	e.plugin("promote", name, "v1", "--to", "bridge").mustCode(t, 0)
	before := e.crd(name)

	st := e.plugin("status", name).mustCode(t, 0)
	contains(t, "status", st.stdout, "promote -f CRD_MANIFEST "+name+" v1 --to deprecated", "Argo CD")

	r := e.plugin("promote", name, "v1").mustCode(t, 3)
	contains(t, "held back", r.stdout, "not applied: Argo CD syncs this CRD", "label argocd.argoproj.io/instance=shop",
		"would be reverted", "kubectl crdversion promote -f CRD_MANIFEST "+name+" v1 --to deprecated", "--force")
	if after := e.crd(name); after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("the live CRD was edited: resourceVersion %s -> %s", before.ResourceVersion, after.ResourceVersion)
	}

	// The command it names does it in the manifest.
	file := writeCRD(t, before)
	e.plugin("promote", "-f", file, name, "v1", "--to", "deprecated").mustCode(t, 0)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	contains(t, "manifest", string(raw), "deprecated: true")

	// --force edits the live CRD anyway.
	e.plugin("promote", name, "v1", "--force").mustCode(t, 0)
	if v := specVersion(e.crd(name), "v1"); v == nil || !v.Storage {
		t.Fatal("--force did not make v1 the storage version")
	}
}

// applyWidgetsCRD applies the CRD as a user would, and waits until it is
// established: kubectl apply returns before the API server serves it.
func (e *env) applyWidgetsCRD(t *testing.T) {
	t.Helper()
	e.kubectlIn(widgetsCRD, "apply", "-f", "-").mustCode(t, 0)
	e.kubectl("wait", "--for=condition=established", "--timeout=60s", "crd/widgets.conv.example.com").mustCode(t, 0)
}

// Numbers come back from a converter as JSON numbers, and the file's are
// YAML's: compared by value, as the API server compares them, a converter
// that keeps them loses nothing, integers past 2^53 included.
func TestConvertThroughTheWebhookKeepsNumbers(t *testing.T) {
	e := newEnv(t, 0)
	installEndpoints(t, e, 0)
	const manifest = `apiVersion: net.example.com/v1
kind: Endpoint
metadata:
  name: web
  namespace: default
spec:
  hostPort: web.example.com:443
  replicas: 3
  weight: 0.5
  serial: 9007199254740993
`
	dir := writeTree(t, map[string]string{"ep.yaml": manifest})
	file := filepath.Join(dir, "ep.yaml")
	r := e.plugin("convert", "-f", file, "--to", "v2", "--in-place").mustCode(t, 0)
	contains(t, "numbers", r.stdout, "1 converted to v2")
	got := readTree(t, dir)["ep.yaml"]
	for _, want := range []string{"  replicas: 3\n", "  weight: 0.5\n", "  serial: 9007199254740993\n", "apiVersion: net.example.com/v2\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("converted file lacks %q:\n%s", want, got)
		}
	}
}

// SIGTERM (or Ctrl-C) while convert waits on the converter: it stops
// there, before any file is written, and says so with exit 3; the file is
// as it was, byte for byte.
func TestConvertStopsOnSIGTERMWritingNothing(t *testing.T) {
	e := newEnv(t, 0)
	wh := installEndpoints(t, e, 0)
	dir := writeTree(t, map[string]string{"ep.yaml": endpointsManifest})
	file := filepath.Join(dir, "ep.yaml")
	started, release := wh.Stall("db", time.Minute)
	defer release()

	cmd := exec.CommandContext(t.Context(), "kubectl", "crdversion", "convert", "-f", file, "--to", "v2", "--in-place")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.sb.KubeconfigPath(), "HOME="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatalf("the converter was never asked:\n%s", errOut.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := result{stdout: out.String()}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) {
		t.Fatalf("convert after SIGTERM: %v, want exit 3", err)
	}
	r.code, r.stdout, r.stderr = exit.ExitCode(), out.String(), errOut.String()
	oneError(t, r.mustCode(t, 3), "interrupted: nothing was written")
	if got := readTree(t, dir)["ep.yaml"]; got != endpointsManifest {
		t.Fatalf("the file changed:\n%s", got)
	}
}

// A converter that will not convert one object converts the rest: that
// object is refused, in its row, with the converter's message; one that
// fails every object is an error naming the file, the line and the object.
func TestConvertNamesWhatTheConverterRefuses(t *testing.T) {
	e := newEnv(t, 0)
	wh := installEndpoints(t, e, 0)
	wh.SetMode(convwebhook.RefusesExtra)
	manifest := strings.Replace(endpointsManifest, "  hostPort: db.internal:5432\n", "  hostPort: db.internal:5432\n  extra: only v1 has it\n", 1)
	dir := writeTree(t, map[string]string{"ep.yaml": manifest})
	file := filepath.Join(dir, "ep.yaml")

	r := e.plugin("convert", "-f", file, "--to", "v2", "--in-place").mustCode(t, 3)
	contains(t, "one refused", r.stdout, "1 converted to v2", "1 refused", file+":12", "default/db",
		"refused: the converter will not convert it: default/db: spec.extra has no form at net.example.com/v2")
	got := readTree(t, dir)["ep.yaml"]
	if !strings.Contains(got, "host: web.example.com") || !strings.Contains(got, "hostPort: db.internal:5432\n  extra: only v1 has it") {
		t.Fatalf("want web converted and db as it was:\n%s", got)
	}

	wh.SetMode(convwebhook.Failing)
	dir = writeTree(t, map[string]string{"ep.yaml": endpointsManifest})
	file = filepath.Join(dir, "ep.yaml")
	oneError(t, e.plugin("convert", "-f", file, "--to", "v2", "--in-place").mustCode(t, 1),
		file+":2: document 1: default/web: endpoints.net.example.com's converter failed: conversion webhook is failing on purpose")
	if got := readTree(t, dir)["ep.yaml"]; got != endpointsManifest {
		t.Fatalf("the file changed:\n%s", got)
	}
}

// --to a version the CRD has but does not serve: the API server would
// refuse the objects, so nothing is converted (exit 1).
func TestConvertToAVersionNotServed(t *testing.T) {
	crd := filepath.Join(writeTree(t, map[string]string{"crd.yaml": strings.Replace(widgetsCRD, "  - name: v1\n    served: true", "  - name: v1\n    served: false", 1)}), "crd.yaml")
	files := map[string]string{"w.yaml": kustomizeBase["more/widget.yml"]}
	dir := writeTree(t, files)
	oneError(t, offline(t, "convert", "-f", dir, "--to", "v1", "--crd-file", crd, "--in-place").mustCode(t, 1),
		"v1 is not served", "widgets.conv.example.com serves v1beta1")
	if got := readTree(t, dir)["w.yaml"]; got != files["w.yaml"] {
		t.Fatal("the file changed")
	}
}

// gizmosCRD's v1 is stricter than v1beta1: spec.size at least 1 (OpenAPI)
// and at most 5 (a CEL rule).
const gizmosCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.val.example.com
spec:
  group: val.example.com
  names: {kind: Gizmo, plural: gizmos, singular: gizmo, listKind: GizmoList}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
  - name: v1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: self.size <= 5
              message: size must be at most 5
            properties:
              size: {type: integer, minimum: 1}
`

func gizmo(name string, size int) string {
	return fmt.Sprintf("apiVersion: val.example.com/v1beta1\nkind: Gizmo\nmetadata:\n  name: %s\n  namespace: default\nspec:\n  size: %d\n", name, size)
}

// An object converted is one the API server takes: one its new version's
// schema or CEL rules would reject is counted apart, named with the
// rule's message, and left as it was (exit 3), offline as well; the API
// server's own dry-run create agrees on each.
func TestConvertValidatesAtTheNewVersion(t *testing.T) {
	e := newEnv(t, 0)
	e.kubectlIn(gizmosCRD, "apply", "-f", "-").mustCode(t, 0)
	e.kubectl("wait", "--for=condition=established", "--timeout=60s", "crd/gizmos.val.example.com").mustCode(t, 0)
	files := map[string]string{"gizmos.yaml": gizmo("fits", 3) + "---\n" + gizmo("big", 10) + "---\n" + gizmo("empty", 0)}
	crd := filepath.Join(writeTree(t, map[string]string{"crd.yaml": gizmosCRD}), "crd.yaml")
	for _, how := range [][]string{nil, {"--crd-file", crd}} {
		dir := writeTree(t, files)
		file := filepath.Join(dir, "gizmos.yaml")
		args := append([]string{"convert", "-f", file, "--to", "v1", "--in-place"}, how...)
		var r result
		if how == nil {
			r = e.plugin(args...)
		} else {
			r = offline(t, args...)
		}
		contains(t, fmt.Sprint("convert ", how), r.mustCode(t, 3).stdout, "1 converted to v1", "2 would be rejected at v1",
			"default/big", "rejected at v1: spec: Invalid value: size must be at most 5",
			"default/empty", "rejected at v1: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1")
		if got, want := readTree(t, dir)["gizmos.yaml"], strings.Replace(files["gizmos.yaml"], "v1beta1", "v1", 1); got != want {
			t.Fatalf("gizmos.yaml:\n%s\nwant only fits converted:\n%s", got, want)
		}
	}
	// The judge: the API server's dry-run create at v1.
	e.kubectlIn(strings.Replace(gizmo("fits", 3), "v1beta1", "v1", 1), "create", "--dry-run=server", "-f", "-").mustCode(t, 0)
	r := e.kubectlIn(strings.Replace(gizmo("big", 10), "v1beta1", "v1", 1), "create", "--dry-run=server", "-f", "-").mustCode(t, 1)
	contains(t, "API server on big", r.stderr, "size must be at most 5")
	r = e.kubectlIn(strings.Replace(gizmo("empty", 0), "v1beta1", "v1", 1), "create", "--dry-run=server", "-f", "-").mustCode(t, 1)
	contains(t, "API server on empty", r.stderr, "should be greater than or equal to 1")
}

// What convert leaves as it was, it says per object and why; what the CRDs
// given would refuse as it stays (a field the version does not declare, a
// kind its group's CRDs no longer define) needs attention (exit 3), and
// the API server's own dry-run create agrees. Objects of other groups are
// only counted.
func TestConvertSaysWhatItPassesThrough(t *testing.T) {
	e := newEnv(t, 0)
	e.applyWidgetsCRD(t)
	stale := "apiVersion: conv.example.com/v1\nkind: Widget\nmetadata:\n  name: stale\n  namespace: default\nspec:\n  size: 2\n  legacy: kept by hand\n"
	sprocket := "apiVersion: conv.example.com/v1beta1\nkind: Sprocket\nmetadata:\n  name: dropped\n  namespace: default\nspec:\n  teeth: 12\n"
	deployment := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  replicas: 1\n"
	files := map[string]string{
		"widgets.yaml": kustomizeBase["more/widget.yml"] + "---\n" + stale,
		"other.yaml":   sprocket + "---\n" + deployment,
	}
	dir := writeTree(t, files)

	r := e.plugin("convert", "-f", dir, "--to", "v1", "--in-place").mustCode(t, 3)
	contains(t, "table", r.stdout, "1 converted to v1", "1 would be rejected at v1", "1 of kinds with no CRD given", "1 of other groups",
		"widgets.yaml:9", "default/stale", "rejected at v1: spec.legacy: field not declared in schema",
		"other.yaml:1", "Sprocket", "default/dropped", "no CRD of kind Sprocket")
	after := readTree(t, dir)
	if want := strings.Replace(files["widgets.yaml"], "conv.example.com/v1beta1", "conv.example.com/v1", 1); after["widgets.yaml"] != want {
		t.Errorf("widgets.yaml:\n%s\nwant only nested converted:\n%s", after["widgets.yaml"], want)
	}
	if after["other.yaml"] != files["other.yaml"] {
		t.Errorf("other.yaml changed:\n%s", after["other.yaml"])
	}

	// As a document: each object left, with a reason code.
	r = e.plugin("convert", "-f", dir, "--to", "v1", "--in-place", "-o", "json").mustCode(t, 3)
	var doc struct {
		Kind         string
		Others       int
		NotConverted []struct {
			Where, Kind, Name, Reason string
			Errors                    []string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	got := map[string]string{}
	for _, n := range doc.NotConverted {
		got[n.Name] = n.Reason
	}
	if doc.Kind != "ConvertReport" || doc.Others != 1 || len(got) != 3 || got["nested"] != "atVersion" || got["stale"] != "rejected" || got["dropped"] != "noCRD" {
		t.Errorf("report: %+v", doc)
	}

	// From stdin, the list goes to stderr with the summary.
	r = e.kubectlIn(files["widgets.yaml"]+"---\n"+files["other.yaml"], "crdversion", "convert", "-f", "-", "--to", "v1").mustCode(t, 3)
	contains(t, "stderr list", r.stderr, "NOT CONVERTED", "rejected: widgets.conv.example.com refuses it as it is, at v1: spec.legacy: field not declared in schema",
		"noCRD: no CRD of kind Sprocket")

	// Only objects it converts, and others: nothing to attend to.
	r = e.kubectlIn(kustomizeBase["more/widget.yml"]+"---\n"+deployment, "crdversion", "convert", "-f", "-", "--to", "v1").mustCode(t, 0)
	contains(t, "fine", r.stderr, "1 converted to v1; 1 of other groups: left as they were")

	// The judge: the API server refuses both as they are.
	r = e.kubectlIn(stale, "create", "--dry-run=server", "-f", "-").mustCode(t, 1)
	contains(t, "API server on stale", r.stderr, `unknown field "spec.legacy"`)
	r = e.kubectlIn(sprocket, "create", "--dry-run=server", "-f", "-").mustCode(t, 1)
	contains(t, "API server on dropped", r.stderr, `no matches for kind "Sprocket"`)
}

// releaseDir is where the module cache holds module@version, through the
// Go module proxy; a release that cannot be had skips the test.
func releaseDir(t *testing.T, module, version string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GONOSUMDB=*", "GOSUMDB=off")
	out, _ := cmd.Output()
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Dir == "" {
		t.Skipf("%s@%s not available: %s%s", module, version, info.Error, out)
	}
	return info.Dir
}

// legacyComposition is a Patch & Transform Composition (spec.resources),
// as Crossplane v1.17 takes it: v2.0.0's schema no longer declares it.
const legacyComposition = `apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: xbuckets-legacy
spec:
  compositeTypeRef:
    apiVersion: example.org/v1alpha1
    kind: XBucket
  resources:
  - name: bucket
    base:
      apiVersion: s3.aws.upbound.io/v1beta1
      kind: Bucket
      spec:
        forProvider:
          region: us-east-2
    patches:
    - type: FromCompositeFieldPath
      fromFieldPath: spec.region
      toFieldPath: spec.forProvider.region
`

// pipelineComposition is one v2.0.0 takes, and a ControllerConfig, whose
// CRD v2.0.0 drops from pkg.crossplane.io.
const pipelineComposition = `apiVersion: apiextensions.crossplane.io/v1
kind: Composition
metadata:
  name: xbuckets
spec:
  compositeTypeRef:
    apiVersion: example.org/v1alpha1
    kind: XBucket
  mode: Pipeline
  pipeline:
  - step: patch-and-transform
    functionRef:
      name: function-patch-and-transform
---
apiVersion: pkg.crossplane.io/v1alpha1
kind: ControllerConfig
metadata:
  name: old-settings
spec:
  replicas: 1
`

// Crossplane's real release: its Compositions checked against v2.0.0's
// CRDs (read from its Go module) are refused by NEW's schema where they
// use spec.resources, and its ControllerConfig is of a CRD v2.0.0 drops
// (exit 3); against v1.17.0's they pass (exit 0). The API server with
// v2.0.0's Composition CRD refuses the legacy one's server-side apply.
func TestConvertCrossplaneCompositionsAgainstV2(t *testing.T) {
	v117 := filepath.Join(releaseDir(t, "github.com/crossplane/crossplane", "v1.17.0"), "cluster", "crds")
	v2 := filepath.Join(releaseDir(t, "github.com/crossplane/crossplane/v2", "v2.0.0"), "cluster", "crds")
	dir := writeTree(t, map[string]string{"compositions.yaml": legacyComposition + "---\n" + pipelineComposition})

	r := offline(t, "convert", "-f", dir, "--to", "v1", "--crd-file", v2, "--in-place", "-o", "yaml").mustCode(t, 3)
	var doc struct {
		NotConverted []struct {
			Name, Reason string
			Errors       []string
		}
	}
	if err := yaml.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	got := map[string]string{}
	for _, n := range doc.NotConverted {
		got[n.Name] = n.Reason + ": " + strings.Join(n.Errors, "; ")
	}
	if !strings.HasPrefix(got["xbuckets-legacy"], "rejected: ") || !strings.Contains(got["xbuckets-legacy"], "spec.resources: field not declared in schema") ||
		got["xbuckets"] != "atVersion: " || got["old-settings"] != "noCRD: " {
		t.Errorf("against v2.0.0: %q\n%s", got, r.stdout)
	}
	r = offline(t, "convert", "-f", dir, "--to", "v1", "--crd-file", v117, "--in-place").mustCode(t, 0)
	contains(t, "against v1.17.0", r.stdout, "2 already at v1")

	e := newEnv(t, 0)
	e.kubectl("create", "-f", filepath.Join(v2, "apiextensions.crossplane.io_compositions.yaml")).mustCode(t, 0)
	e.kubectl("wait", "--for=condition=established", "--timeout=60s", "crd/compositions.apiextensions.crossplane.io").mustCode(t, 0)
	r = e.kubectlIn(legacyComposition, "apply", "--server-side", "--dry-run=server", "-f", "-").mustCode(t, 1)
	contains(t, "API server on the legacy Composition", r.stderr, "spec.resources", "field not declared in schema")
}
