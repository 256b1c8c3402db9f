package manifest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// lineBreaks are the characters YAML counts as line breaks besides LF.
var lineBreaks = []string{"\u0085", "\u2028", "\u2029"}

// offlineSeeds are the repository's own manifests, the cases that once
// broke, and the shapes the tests use.
func offlineSeeds() []string {
	seeds := []string{original, crdDoc}
	for _, pattern := range []string{"../../hack/demo/*.yaml", "../../test/e2e/testdata/check/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if raw, err := os.ReadFile(f); err == nil {
				seeds = append(seeds, string(raw))
			}
		}
	}
	for _, br := range lineBreaks {
		seeds = append(seeds,
			strings.Replace(original, "# The Widget CRD.", "# The Widget CRD."+br+"# more", 1),
			strings.Replace(original, "    storage: true\n", "    storage: true\n    # the old"+br+"# flags\n", 1),
			strings.Replace(original, "  # the new version\n", "  # the new"+br+"version\n", 1))
	}
	return seeds
}

// checkOfflineStep is the editor's property: for any file the parser
// accepts, the next offline step either is refused, leaving the file as it
// was, or changes exactly what the plan names: the edited file decodes to
// the plan's CRD, and every other document decodes as before.
func checkOfflineStep(t *testing.T, content string) {
	path := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	crds, err := ReadEditable(t.Context(), path)
	if err != nil || len(crds) != 1 || crds[0].Editable() != nil {
		return
	}
	c := crds[0]
	version, err := stages.InFlight(c.Obj)
	if err != nil {
		return
	}
	p, err := stages.PlanPromote(c.Obj, version, "", stages.PromoteOptions{Offline: true})
	if err != nil {
		return
	}
	before := decodedDocs(t, c.File)
	if err := c.Apply(p); err != nil {
		return // refused: the command writes nothing
	}
	if err := os.WriteFile(path, c.File.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := ReadEditable(t.Context(), path)
	if err != nil || len(again) != 1 {
		t.Fatalf("the edit left a file that does not read: %v\n%q", err, c.File.Bytes())
	}
	want, _ := json.Marshal(p.After)
	got, _ := json.Marshal(withoutFileText(again[0].Obj))
	if !bytes.Equal(want, got) {
		t.Fatalf("the edited file is not the plan's CRD:\ngot  %s\nwant %s\nfile %q", got, want, c.File.Bytes())
	}
	after := decodedDocs(t, again[0].File)
	for i := range before {
		if i != c.Index && before[i] != after[i] {
			t.Fatalf("document %d changed:\n%s\n→\n%s", i+1, before[i], after[i])
		}
	}
	// The step's rollback gives the file back byte for byte.
	back, err := stages.PlanRollback(again[0].Obj, version, stages.RollbackOptions{Offline: true})
	if err != nil {
		return
	}
	if err := again[0].Apply(back); err != nil {
		t.Fatalf("the rollback of the step was refused: %v\n%q", err, again[0].File.Bytes())
	}
	if got := string(again[0].File.Bytes()); got != content {
		t.Fatalf("promote then rollback changed the file:\nbefore %q\nafter  %q", content, got)
	}
}

// withoutFileText is a CRD read from a file with the record's file-only
// fields left out: what the plan's CRD holds.
func withoutFileText(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	steps := stages.Steps(crd)
	if steps == nil {
		return crd
	}
	out := crd.DeepCopy()
	for i := range steps {
		steps[i].AnnotationsText = nil
		for j := range steps[i].Changes {
			steps[i].Changes[j].Text = nil
		}
	}
	out.Annotations[stages.StepsAnnotation] = stages.EncodeSteps(steps)
	return out
}

func decodedDocs(t *testing.T, f *File) []string {
	out := make([]string, len(f.docs))
	for i, d := range f.docs {
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(v)
		out[i] = string(raw)
	}
	return out
}

// A comment holding a character YAML counts as a line break, above the
// flags or right after them: the edit lands on the flags it names, and
// every comment stays as it was.
func TestOfflineEditCountsEveryLineBreak(t *testing.T) {
	for _, seed := range offlineSeeds() {
		checkOfflineStep(t, seed)
	}
	for _, br := range lineBreaks {
		content := strings.Replace(original, "    storage: true\n", "    storage: true\n    # the old"+br+"# flags\n", 1)
		got := step(t, content, promote(lifecycle.StageDeprecated, ""))
		if !strings.Contains(got, "    # the old"+br+"# flags\n") || !strings.Contains(got, "  # the new version\n") || !strings.Contains(got, "served: true   # served until 2027") {
			t.Errorf("%q: a comment was rewritten:\n%s", br, got)
		}
	}
}

func FuzzOfflineStep(f *testing.F) {
	for _, s := range offlineSeeds() {
		f.Add(s)
	}
	f.Fuzz(checkOfflineStep)
}

// Every reader either reads or says why: no panic, no CRD without its
// object.
func FuzzReadCRDs(f *testing.F) {
	for _, s := range offlineSeeds() {
		f.Add(s)
	}
	f.Add("apiVersion: v1\nkind: List\nitems:\n- kind: CustomResourceDefinition\n  apiVersion: apiextensions.k8s.io/v1\n")
	f.Add("a: &a [x, x]\nb: [*a, *a]\n")
	f.Fuzz(func(t *testing.T, content string) {
		found, err := ReadCRDs(t.Context(), []string{Stdin}, false, strings.NewReader(content))
		if err != nil {
			return
		}
		for _, c := range found.CRDs {
			if c == nil {
				t.Fatal("a nil CRD")
			}
		}
	})
}

// checkRewrite is the object editor's property: for any file the parser
// accepts and any of a few edits to its first object, the rewrite either
// is refused, leaving the file as it was, or the file decodes to exactly
// the edited object, every other document as before.
func checkRewrite(t *testing.T, content string, edit uint8) {
	f := &File{Path: "x.yaml"}
	if f.parse([]byte(content)) != nil {
		return
	}
	objs, err := f.Objects()
	if err != nil || len(objs) == 0 {
		return
	}
	obj := objs[0]
	want, _ := jsonObject(obj.Obj)
	spec, _ := want["spec"].(map[string]any)
	switch edit % 4 {
	case 0:
		want["apiVersion"] = "example.com/v2"
	case 1:
		for k := range spec {
			delete(spec, k)
			break
		}
	case 2:
		if spec == nil {
			spec = map[string]any{}
			want["spec"] = spec
		}
		spec["added"] = map[string]any{"port": "80", "list": []any{"a", json.Number("1")}}
	case 3:
		want["spec"] = "a string now"
	}
	before := decodedDocs(t, f)
	src := bytes.Clone(f.Bytes())
	if err := obj.Rewrite(want); err != nil {
		if !bytes.Equal(src, f.Bytes()) {
			t.Fatalf("a refused rewrite changed the file:\n%q\n→\n%q", src, f.Bytes())
		}
		return
	}
	again := &File{Path: "x.yaml"}
	if err := again.parse(f.Bytes()); err != nil {
		t.Fatalf("the rewrite left a file that does not parse: %v\n%q", err, f.Bytes())
	}
	got, err := again.Objects()
	if err != nil || len(got) != len(objs) {
		t.Fatalf("the rewrite left %d objects (%v), want %d\n%q", len(got), err, len(objs), f.Bytes())
	}
	w, _ := normalize(want)
	g, _ := normalize(got[0].Obj)
	wj, _ := json.Marshal(w)
	gj, _ := json.Marshal(g)
	if !bytes.Equal(wj, gj) {
		t.Fatalf("the rewritten object is not the one asked for:\ngot  %s\nwant %s\nfile %q", gj, wj, f.Bytes())
	}
	after := decodedDocs(t, again)
	for i := range before {
		if i != obj.Index && before[i] != after[i] {
			t.Fatalf("document %d changed:\n%s\n→\n%s", i+1, before[i], after[i])
		}
	}
}

func FuzzRewrite(f *testing.F) {
	for _, s := range offlineSeeds() {
		for e := range uint8(4) {
			f.Add(s, e)
		}
	}
	for _, s := range []string{
		"apiVersion: a/v1 # c\nkind: W\nspec:\n  x: 1\n  y: [1, 2]\n",
		"kind: W\nspec:\n  l:\n  - a: 1\n    b: 2\n---\nkind: Other\n",
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: a/v1\n  kind: W\n  spec: {x: 1}\n",
		"kind: W\r\nspec:\r\n  x: |\r\n    text\r\n",
	} {
		for e := range uint8(4) {
			f.Add(s, e)
		}
	}
	f.Fuzz(checkRewrite)
}

// checkRewriteAll holds RewriteAll, which edits each document on its own,
// to the editor that re-parses the whole file after each edit: for any
// file and edits to every object, both give the same bytes, or both
// refuse and leave the file as it was.
func checkRewriteAll(t *testing.T, content string, edit uint8) {
	parse := func() (*File, []Object) {
		f := &File{Path: "x.yaml"}
		if f.parse([]byte(content)) != nil {
			return nil, nil
		}
		objs, err := f.Objects()
		if err != nil {
			return nil, nil
		}
		return f, objs
	}
	all, objs := parse()
	if all == nil || len(objs) == 0 {
		return
	}
	whole, wholeObjs := parse()
	edits := func(objs []Object) []Edit {
		out := make([]Edit, len(objs))
		for i := range objs {
			want, _ := jsonObject(objs[i].Obj)
			switch (int(edit) + i) % 3 {
			case 0:
				want["apiVersion"] = "example.com/v2"
			case 1:
				want["spec"] = map[string]any{}
			case 2:
				want["spec"] = map[string]any{"added": map[string]any{"n": int64(9007199254740993)}}
			}
			out[i] = Edit{Object: &objs[i], Want: want}
		}
		return out
	}
	errAll := all.RewriteAll(t.Context(), edits(objs))
	errWhole := whole.rewriteWhole(t.Context(), edits(wholeObjs))
	switch {
	case (errAll == nil) != (errWhole == nil):
		t.Fatalf("RewriteAll: %v, one by one: %v\n%q", errAll, errWhole, content)
	case errAll != nil && string(all.Bytes()) != content:
		t.Fatalf("a refused RewriteAll changed the file:\n%q\n→\n%q", content, all.Bytes())
	case errAll == nil && !bytes.Equal(all.Bytes(), whole.Bytes()):
		t.Fatalf("RewriteAll:\n%q\none by one:\n%q", all.Bytes(), whole.Bytes())
	}
}

func FuzzRewriteAll(f *testing.F) {
	for _, s := range offlineSeeds() {
		f.Add(s, uint8(0))
	}
	for _, s := range []string{
		"# head\n---\napiVersion: a/v1 # c\nkind: W\nspec:\n  x: 1\n---\nkind: W\nspec: {y: 2}\n...\n# tail\n",
		"kind: W\nspec:\n  l:\n  - a: 1\n---\n---\nkind: Other\n",
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: a/v1\n  kind: W\n  spec: {x: 1}\n- kind: W\n",
		"%YAML 1.2\n---\nkind: W\nspec:\n  x: 1\n",
		"kind: W\r\nspec:\r\n  x: |\r\n    ---\r\n---\r\nkind: W\r\n",
		"kind: W\nspec: &a {x: 1}\n---\nkind: W\nspec: {}\n",
	} {
		for e := range uint8(3) {
			f.Add(s, e)
		}
	}
	f.Fuzz(checkRewriteAll)
}
