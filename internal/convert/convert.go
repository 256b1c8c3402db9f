// Package convert moves custom resources in manifest files (Helm charts,
// kustomize bases, GitOps repositories) to another version of their CRD,
// the way the API server would convert them: with conversion None by
// rewriting apiVersion, with a webhook through the CRD's own converter.
// What a new version's schema would drop, or a converter's round trip
// would not bring back, is a loss, and a lossy object is left as it was
// unless loss is accepted.
package convert

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/manifest"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// Options says what to convert to, and by which CRDs.
type Options struct {
	// To is the version to convert to (v1), or group/version to convert
	// only the custom resources of that group.
	To string
	// CRDs are the definitions the objects are of, from a cluster or from
	// manifest files; an object of no CRD here is left as it is.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Webhook reaches the converters of CRDs with Webhook conversion.
	Webhook Webhook
	// AcceptLoss converts lossy objects too, dropping what they lose.
	AcceptLoss bool
	// Batch is how many objects go in one ConversionReview; 0 means 100.
	Batch int
}

// NoVersionError is a version to convert to that no CRD of the input's
// custom resources has.
type NoVersionError struct {
	Version string
	// Has is each CRD's versions, "crd has v1beta1, v1".
	Has []string
}

func (e *NoVersionError) Error() string {
	return fmt.Sprintf("no custom resource in the input is of a CRD with version %s (%s)", e.Version, strings.Join(e.Has, "; "))
}

// Convert changes, in the files' text, every custom resource of opts.CRDs
// to opts.To; it writes nothing (manifest.File.Write does). A converter
// that answers wrongly is an *AnswerError and leaves every file as it was.
func Convert(ctx context.Context, files []*manifest.File, opts Options) (*results.ConvertResult, error) {
	group, version := "", opts.To
	if g, v, ok := strings.Cut(opts.To, "/"); ok {
		group, version = g, v
	}
	if version == "" {
		return nil, errors.New("the version to convert to is empty")
	}
	byKind := map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range opts.CRDs {
		byKind[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = crd
	}
	groups := map[string]bool{}
	for gk := range byKind {
		groups[gk.Group] = true
	}
	res := &results.ConvertResult{To: opts.To}
	var todo []*pending
	var crs []*candidate
	var order []seenObject
	seen := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		objs, err := f.Objects()
		if err != nil {
			return nil, err
		}
		for i := range objs {
			obj := &objs[i]
			apiVersion, _ := obj.Obj["apiVersion"].(string)
			kind, _ := obj.Obj["kind"].(string)
			gv, err := schema.ParseGroupVersion(apiVersion)
			if err != nil || apiVersion == "" || kind == "" {
				continue
			}
			crd := byKind[schema.GroupKind{Group: gv.Group, Kind: kind}]
			switch {
			case group != "" && group != gv.Group:
				res.Others++
				continue
			case crd == nil && groups[gv.Group]:
				order = append(order, seenObject{noCRD: noCRD(obj, apiVersion, kind, gv.Group)})
				continue
			case crd == nil:
				res.Others++
				continue
			}
			seen[crd.Name] = crd
			row := results.ConvertedObject{
				Where: obj.Where(), File: f.Path, CRD: crd.Name, Kind: kind,
				Namespace: meta(obj.Obj, "namespace"), Name: meta(obj.Obj, "name"),
				From: gv.Version, To: version,
			}
			switch {
			case !hasVersion(crd, version):
				row.Outcome = results.NoSuchVersion
			case !serves(crd, version):
				row.Outcome = results.NotServed
			case gv.Version == version:
				row.Outcome = results.AtVersion
			default:
				todo = append(todo, &pending{obj: obj, crd: crd, row: len(res.Objects)})
			}
			order = append(order, seenObject{row: len(res.Objects), apiVersion: apiVersion, asIs: row.Outcome != ""})
			res.Objects = append(res.Objects, row)
			crs = append(crs, &candidate{obj: obj, index: len(res.Objects) - 1})
		}
	}
	switch left := res.Count(results.NoSuchVersion) + res.Count(results.NotServed); {
	case len(res.Objects) > 0 && res.Count(results.NoSuchVersion) == len(res.Objects):
		return nil, noVersion(seen, version)
	case len(res.Objects) > 0 && left == len(res.Objects):
		return nil, notServed(seen, version)
	}
	if err := convertAll(ctx, todo, opts, version); err != nil {
		return nil, err
	}
	for _, p := range todo {
		row := &res.Objects[p.row]
		row.Lost = p.lost
		if p.refused != "" {
			row.Outcome, row.Reason = results.Refused, p.refused
			continue
		}
		if len(p.lost) > 0 && !opts.AcceptLoss {
			row.Outcome = results.Refused
			continue
		}
		// As the API server would take it: a create at the new version.
		errs, err := p.schemas.rejected(ctx, p.want, version)
		switch {
		case err != nil:
			return nil, err
		case len(errs) > 0:
			row.Outcome, row.Reason, row.Errors = results.Rejected, aggregate(errs), errs
			continue
		}
		row.Outcome = results.Converted
	}
	// What stays as it is must still be taken by the CRDs given.
	if err := checkAsIs(ctx, crs, res, seen); err != nil {
		return nil, err
	}
	for _, c := range crs {
		c.row = &res.Objects[c.index]
		c.moving = c.row.Outcome == results.Converted
	}
	kEdits, moved, err := followKustomizations(files, crs, version)
	if err != nil {
		return nil, err
	}
	res.Kustomizations = moved
	res.NotConverted = notConverted(res, order)
	edits := map[*manifest.File][]manifest.Edit{}
	for _, e := range kEdits {
		edits[e.Object.File] = append(edits[e.Object.File], e)
	}
	for _, p := range todo {
		if res.Objects[p.row].Outcome == results.Converted {
			edits[p.obj.File] = append(edits[p.obj.File], manifest.Edit{Object: p.obj, Want: p.want})
		}
	}
	// A stop asked for is taken between objects (RewriteAll): the files
	// are still only in memory.
	for _, f := range files {
		if err := f.RewriteAll(ctx, edits[f]); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// pending is an object to convert: what it becomes and what that loses.
type pending struct {
	obj  *manifest.Object
	crd  *apiextensionsv1.CustomResourceDefinition
	row  int
	want map[string]any
	lost []results.FieldDiff
	// refused says why the converter's answer leaves it as it is.
	refused string
	// schemas are its CRD's.
	schemas *schemas
}

// convertAll works out want and lost of every pending object, a CRD at a
// time.
func convertAll(ctx context.Context, todo []*pending, opts Options, version string) error {
	byCRD := map[string][]*pending{}
	var order []string
	for _, p := range todo {
		if _, ok := byCRD[p.crd.Name]; !ok {
			order = append(order, p.crd.Name)
		}
		byCRD[p.crd.Name] = append(byCRD[p.crd.Name], p)
	}
	for _, name := range order {
		ps := byCRD[name]
		crd := ps[0].crd
		s, err := newSchemas(crd)
		if err != nil {
			return err
		}
		for _, p := range ps {
			p.schemas = s
		}
		if crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter {
			if err := viaWebhook(ctx, s, ps, opts, version); err != nil {
				return err
			}
			continue
		}
		for _, p := range ps {
			from := versionOf(p.obj.Obj)
			p.lost = s.dropped(p.obj.Obj, version, from)
			p.want = s.prune(p.obj.Obj, version)
			p.want["apiVersion"] = crd.Spec.Group + "/" + version
		}
	}
	return nil
}

// withUID is a copy of obj with a uid, which the API server always sends
// and checks, and manifests never have: the converter must hand it back.
func withUID(obj map[string]any, i int) map[string]any {
	out := runtime.DeepCopyJSONValue(obj).(map[string]any)
	m, _ := out["metadata"].(map[string]any)
	if m == nil {
		m = map[string]any{}
		out["metadata"] = m
	}
	if _, ok := m["uid"]; !ok {
		m["uid"] = fmt.Sprintf("00000000-0000-0000-0000-%012d", i)
	}
	return out
}

// aggregate words field errors as the API server's aggregate does.
func aggregate(errs []string) string {
	if len(errs) == 1 {
		return errs[0]
	}
	return "[" + strings.Join(errs, ", ") + "]"
}

func versionOf(obj map[string]any) string {
	gv, _ := schema.ParseGroupVersion(str(obj, "apiVersion"))
	return gv.Version
}

func hasVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			return true
		}
	}
	return false
}

// serves says whether the CRD serves the version: objects at a version it
// does not serve cannot be applied.
func serves(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			return v.Served
		}
	}
	return false
}

// NotServedError is a version to convert to that the CRDs of the input's
// custom resources have but do not serve.
type NotServedError struct {
	Version string
	// Serves is each CRD's served versions, "crd serves v1beta1".
	Serves []string
}

func (e *NotServedError) Error() string {
	return fmt.Sprintf("%s is not served: the API server would refuse objects at it (%s)", e.Version, strings.Join(e.Serves, "; "))
}

func notServed(crds map[string]*apiextensionsv1.CustomResourceDefinition, version string) error {
	var serves []string
	for _, name := range slices.Sorted(maps.Keys(crds)) {
		var names []string
		for _, v := range crds[name].Spec.Versions {
			if v.Served {
				names = append(names, v.Name)
			}
		}
		serves = append(serves, fmt.Sprintf("%s serves %s", name, strings.Join(names, ", ")))
	}
	return &NotServedError{Version: version, Serves: serves}
}

// noVersion says which versions the CRDs of the input's objects have.
func noVersion(crds map[string]*apiextensionsv1.CustomResourceDefinition, version string) error {
	var has []string
	for _, name := range slices.Sorted(maps.Keys(crds)) {
		names := make([]string, len(crds[name].Spec.Versions))
		for i, v := range crds[name].Spec.Versions {
			names[i] = v.Name
		}
		has = append(has, fmt.Sprintf("%s has %s", name, strings.Join(names, ", ")))
	}
	return &NoVersionError{Version: version, Has: has}
}
