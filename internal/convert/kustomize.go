package convert

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// A kustomization selects the objects it patches by group, version and
// kind: a patch target's version, or an inline strategic-merge patch's
// apiVersion. Once its objects move to another version, a target left at
// the old one silently selects nothing (the patch no longer applies), and
// a strategic-merge patch no longer finds its object (the build fails).
// So a selector whose objects all move, moves with them; one that would
// select objects on both sides refuses the moving ones.

// selector is one place in a kustomization that selects objects by version.
type selector struct {
	kustomization *manifest.Object
	field         string // patches[0].target.version, for people
	gvk           schema.GroupVersionKind
	name          string // a regular expression, as kustomize reads it
	namespace     string
	labels        string
	annotations   string
	// move returns the kustomization's content with the selector at the
	// version to.
	move func(k map[string]any, to string) map[string]any
}

// candidate is a custom resource of the input and whether it moves.
type candidate struct {
	obj    *manifest.Object
	index  int // of its row
	row    *results.ConvertedObject
	moving bool
}

// isKustomization says whether the object is a kustomization file's.
func isKustomization(o *manifest.Object) bool {
	switch filepath.Base(o.File.Path) {
	case "kustomization.yaml", "kustomization.yml", "Kustomization":
		return o.Obj["kind"] == nil || o.Obj["kind"] == "Kustomization"
	}
	return false
}

// selectorsOf lists the kustomization's selectors that name a version.
func selectorsOf(k *manifest.Object) []selector {
	var out []selector
	for _, list := range []string{"patches", "patchesJson6902"} {
		entries, _ := k.Obj[list].([]any)
		for i, e := range entries {
			entry, _ := e.(map[string]any)
			if t, ok := entry["target"].(map[string]any); ok && str(t, "version") != "" {
				s := selector{kustomization: k, field: fmt.Sprintf("%s[%d].target.version", list, i),
					gvk:  schema.GroupVersionKind{Group: str(t, "group"), Version: str(t, "version"), Kind: str(t, "kind")},
					name: str(t, "name"), namespace: str(t, "namespace"), labels: str(t, "labelSelector"), annotations: str(t, "annotationSelector")}
				s.move = func(obj map[string]any, to string) map[string]any {
					target := obj[list].([]any)[i].(map[string]any)["target"].(map[string]any)
					target["version"] = to
					return obj
				}
				out = append(out, s)
			}
			if patch, ok := entry["patch"].(string); ok {
				if s, ok := inlinePatch(k, fmt.Sprintf("%s[%d].patch", list, i), patch); ok {
					s.move = func(obj map[string]any, to string) map[string]any {
						e := obj[list].([]any)[i].(map[string]any)
						e["patch"] = withAPIVersion(e["patch"].(string), s.gvk, to)
						return obj
					}
					out = append(out, s)
				}
			}
		}
	}
	entries, _ := k.Obj["patchesStrategicMerge"].([]any)
	for i, e := range entries {
		if patch, ok := e.(string); ok && strings.Contains(patch, "\n") {
			if s, ok := inlinePatch(k, fmt.Sprintf("patchesStrategicMerge[%d]", i), patch); ok {
				s.move = func(obj map[string]any, to string) map[string]any {
					list := obj["patchesStrategicMerge"].([]any)
					list[i] = withAPIVersion(list[i].(string), s.gvk, to)
					return obj
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// inlinePatch is the selector of a strategic-merge patch written in the
// kustomization: its apiVersion, kind and name pick its object.
func inlinePatch(k *manifest.Object, field, patch string) (selector, bool) {
	var p map[string]any
	if yaml.Unmarshal([]byte(patch), &p) != nil || str(p, "apiVersion") == "" || str(p, "kind") == "" {
		return selector{}, false
	}
	gv, err := schema.ParseGroupVersion(str(p, "apiVersion"))
	if err != nil {
		return selector{}, false
	}
	return selector{kustomization: k, field: field + " apiVersion", gvk: gv.WithKind(str(p, "kind")),
		name: regexp.QuoteMeta(meta(p, "name")), namespace: regexp.QuoteMeta(meta(p, "namespace"))}, true
}

// withAPIVersion is patch with its apiVersion line at version to, every
// other line as it was.
func withAPIVersion(patch string, gvk schema.GroupVersionKind, to string) string {
	lines := strings.SplitAfter(patch, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "apiVersion:") {
			lines[i] = strings.Replace(l, gvk.GroupVersion().String(), schema.GroupVersion{Group: gvk.Group, Version: to}.String(), 1)
			break
		}
	}
	return strings.Join(lines, "")
}

// selects says whether s picks the object, as kustomize matches a target:
// every field given must match; name and namespace are anchored regular
// expressions.
func (s selector) selects(obj map[string]any) bool {
	gv, err := schema.ParseGroupVersion(str(obj, "apiVersion"))
	if err != nil || gv.Version != s.gvk.Version || (s.gvk.Group != "" && gv.Group != s.gvk.Group) || (s.gvk.Kind != "" && str(obj, "kind") != s.gvk.Kind) {
		return false
	}
	for _, m := range []struct{ pattern, value string }{{s.name, meta(obj, "name")}, {s.namespace, meta(obj, "namespace")}} {
		if m.pattern == "" {
			continue
		}
		re, err := regexp.Compile("^(?:" + m.pattern + ")$")
		if err != nil || !re.MatchString(m.value) {
			return false
		}
	}
	for _, m := range []struct{ selector, field string }{{s.labels, "labels"}, {s.annotations, "annotations"}} {
		if m.selector == "" {
			continue
		}
		sel, err := labels.Parse(m.selector)
		if err != nil {
			return false
		}
		set, _ := stringMap(metaMap(obj), m.field)
		if !sel.Matches(labels.Set(set)) {
			return false
		}
	}
	return true
}

// inScope says whether a kustomization in dir can pull in the object's
// file: kustomize reads resources at or below its own directory (a base
// elsewhere is its own kustomization, with its own selectors).
func inScope(k *manifest.Object, obj *manifest.Object) bool {
	rel, err := filepath.Rel(filepath.Dir(k.File.Path), obj.File.Path)
	return err == nil && !strings.HasPrefix(rel, "..")
}

// followKustomizations moves each selector whose objects all move, and
// refuses the moving objects of a selector that would be split: repeated
// until nothing more is refused (a refusal can split another selector).
// It returns the kustomizations' edits and what they change.
func followKustomizations(files []*manifest.File, crs []*candidate, to string) ([]manifest.Edit, []results.KustomizeChange, error) {
	var sels []selector
	for _, f := range files {
		objs, err := f.Objects()
		if err != nil {
			return nil, nil, err
		}
		for i := range objs {
			if isKustomization(&objs[i]) {
				sels = append(sels, selectorsOf(&objs[i])...)
			}
		}
	}
	if len(sels) == 0 {
		return nil, nil, nil
	}
	for refused := true; refused; {
		refused = false
		for _, s := range sels {
			moving, staying := s.split(crs)
			if len(moving) == 0 || len(staying) == 0 {
				continue
			}
			for _, c := range moving {
				c.moving = false
				c.row.Outcome = results.Refused
				c.row.Reason = fmt.Sprintf("%s %s selects it at %s with %s, which stays at %s: convert them together, or narrow the selector", where(s.kustomization), s.field, s.gvk.Version, objectName(staying[0].obj.Obj), s.gvk.Version)
			}
			refused = true
		}
	}
	wants := map[*manifest.Object]map[string]any{}
	var order []*manifest.Object
	var changes []results.KustomizeChange
	for _, s := range sels {
		if moving, _ := s.split(crs); len(moving) > 0 {
			k := s.kustomization
			if wants[k] == nil {
				wants[k] = runtime.DeepCopyJSONValue(k.Obj).(map[string]any)
				order = append(order, k)
			}
			wants[k] = s.move(wants[k], to)
			changes = append(changes, results.KustomizeChange{Where: where(k), File: k.File.Path, Field: s.field, From: s.gvk.Version, To: to})
		}
	}
	edits := make([]manifest.Edit, len(order))
	for i, k := range order {
		edits[i] = manifest.Edit{Object: k, Want: wants[k]}
	}
	return edits, changes, nil
}

// split is the custom resources s selects in its kustomization's scope:
// those that move and those that stay.
func (s selector) split(crs []*candidate) (moving, staying []*candidate) {
	for _, c := range crs {
		if !inScope(s.kustomization, c.obj) || !s.selects(c.obj.Obj) {
			continue
		}
		if c.moving {
			moving = append(moving, c)
		} else {
			staying = append(staying, c)
		}
	}
	return moving, staying
}

// where is the kustomization's file and line.
func where(k *manifest.Object) string {
	at, _, _ := strings.Cut(k.Where(), ": document")
	return at
}

func metaMap(obj map[string]any) map[string]any {
	m, _ := obj["metadata"].(map[string]any)
	return m
}
