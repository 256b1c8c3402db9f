package check

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/crvalidation"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// validateOptions tune validateObjects.
type validateOptions struct {
	PageSize int64
	// Progress hears objects validated and the estimated total.
	Progress func(done, total int64)
}

// validateObjects validates every live object against each served new version with a schema,
// as the API server's custom resource strategy does (pruning, defaulting, OpenAPI, CEL, list
// types, ratcheting): an error where even a no-op update is refused, a warning where ratcheting
// lets it through until the field is edited, and first what the schema prunes (prunedFinding).
// Objects are read where readVersion says; a form only a webhook can produce is unseen (a
// warning). It returns how many objects were validated per version.
func validateObjects(ctx context.Context, dyn dynamic.Interface, live, next *apiextensionsv1.CustomResourceDefinition, opts validateOptions) ([]results.Finding, map[string]int64, error) {
	var out []results.Finding
	validated := map[string]int64{}
	for _, v := range next.Spec.Versions {
		if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		readAt := readVersion(live, next, v.Name)
		if readAt == "" {
			out = append(out, notVisible(live, next, v.Name))
			continue
		}
		found, n, err := validateVersion(ctx, dyn, live, next, v, readAt, opts)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, found...)
		validated[v.Name] = n
	}
	lost, err := storedFieldsLost(ctx, dyn, live, next, opts.PageSize)
	if err != nil {
		return nil, nil, err
	}
	return mergeObjects(out, lost), validated, nil
}

func validateVersion(ctx context.Context, dyn dynamic.Interface, live, next *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion, readAt string, opts validateOptions) ([]results.Finding, int64, error) {
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", next.Name, v.Name, err)
	}
	validator, err := crvalidation.New(internal)
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", next.Name, v.Name, err)
	}
	structural := validator.Structural()
	gvk := schema.GroupVersionKind{Group: next.Spec.Group, Version: v.Name, Kind: next.Spec.Names.Kind}

	gvr := schema.GroupVersionResource{Group: live.Spec.Group, Version: readAt, Resource: live.Spec.Names.Plural}
	var out []results.Finding
	done := int64(0)
	_, err = cluster.ListObjectPages(ctx, dyn, gvr, max(opts.PageSize, 1), func(page cluster.ObjectPage) error {
		total := done + int64(len(page.Items))
		if r := page.Remaining; r != nil {
			total += *r
		}
		for i := range page.Items {
			obj := &page.Items[i]
			obj.SetAPIVersion(gvk.GroupVersion().String())
			name := obj.GetName()
			if ns := obj.GetNamespace(); ns != "" {
				name = ns + "/" + name
			}
			// As the API server does before validating. What it prunes, the object holds
			// today under the live schema: data the new schema does not keep.
			if dropped := pruning.PruneWithOptions(obj.Object, structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}); len(dropped) > 0 {
				out = append(out, prunedFinding(live, next, v.Name, name, dropped))
			}
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj.Object, structural)
			structuraldefaulting.Default(obj.Object, structural)
			if errs := validator.ValidateUpdate(ctx, obj.Object, obj.DeepCopy().Object); len(errs) > 0 {
				out = append(out, objectFinding(lifecycle.SeverityError, "objectRefused", next.Name, v.Name, name,
					"even an update that changes nothing is refused", errs))
			} else if errs := validator.Validate(ctx, obj.Object); len(errs) > 0 {
				out = append(out, objectFinding(lifecycle.SeverityWarning, "objectInvalid", next.Name, v.Name, name,
					"invalid under the new schema; let through while these fields stay as they are (validation ratcheting), refused the first time someone edits them", errs))
			}
			done++
			if opts.Progress != nil {
				opts.Progress(done, total)
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("%s at %s: %w", live.Name, readAt, err)
	}
	return groupObjects(out), done, nil
}

func objectFinding(sev lifecycle.Severity, rule, crd, version, object, what string, errs field.ErrorList) results.Finding {
	msgs := make([]string, 0, len(errs))
	paths := make([]string, 0, len(errs))
	skipped := false
	for _, e := range errs {
		// The server adds one whole-object error when a schema error kept the CEL rules
		// from running: say that once, in words, not as "<nil>: Invalid value: null".
		if e.Field == "" || e.Field == "<nil>" {
			skipped = true
			continue
		}
		msgs = append(msgs, e.Error())
		if !slices.Contains(paths, e.Field) {
			paths = append(paths, e.Field)
		}
	}
	msg := what + ": " + strings.Join(msgs, "; ")
	if skipped {
		msg += " (the validation rules were not run on it: the API server runs them only on an object the schema accepts)"
	}
	return results.Finding{Severity: sev, Kind: results.FindingObjects, CRD: crd, Version: version, Rule: rule, Object: object,
		Path: strings.Join(paths, ", "), Message: msg}
}

// prunedFinding is a live object with fields the new schema of version does not list. Where
// objects are or will be stored at version, the data is gone from reads once applied and from
// etcd at the next write: an error. Elsewhere only that version's clients lose them.
func prunedFinding(live, next *apiextensionsv1.CustomResourceDefinition, version, object string, dropped []string) results.Finding {
	var paths []string
	for _, p := range dropped {
		if g := SchemaPath(p); !slices.Contains(paths, g) {
			paths = append(paths, g)
		}
	}
	f := results.Finding{Kind: results.FindingObjects, CRD: next.Name, Version: version, Rule: "objectLosesFields", Object: object,
		Path: strings.Join(paths, ", ")}
	if version == stages.StorageVersion(next) || slices.Contains(live.Status.StoredVersions, version) {
		f.Severity = lifecycle.SeverityError
		f.Message = fmt.Sprintf("holds fields the new schema of %s does not list: once the CRD is applied the API server drops them from every read, and they are gone from etcd at the object's next write (migrate's re-store included)", version)
		f.Fix = []lifecycle.Advice{{Text: "keep the fields in the new schema (or under x-kubernetes-preserve-unknown-fields), or move what they hold into fields it keeps before applying"}}
	} else {
		f.Severity = lifecycle.SeverityWarning
		f.Message = fmt.Sprintf("holds fields the new schema of %s does not list: clients of %s read the object without them, and a write at %s drops them", version, version, version)
	}
	return f
}

// namedObjects is how many names a grouped finding shows before "and N more".
const namedObjects = 3

// groupObjects makes one finding, with every object, of the object findings saying the same
// thing, in first-seen order: 500 objects missing a new required field are one row.
func groupObjects(found []results.Finding) []results.Finding {
	type key struct {
		sev                          lifecycle.Severity
		rule, version, path, message string
	}
	index := map[key]int{}
	var out []results.Finding
	for _, f := range found {
		k := key{f.Severity, f.Rule, f.Version, f.Path, f.Message}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			g := f
			g.Objects = nil
			out = append(out, g)
		}
		out[i].Objects = append(out[i].Objects, f.Object)
	}
	for i := range out {
		out[i].Count = len(out[i].Objects)
		out[i].Object = firstNames(out[i].Objects)
	}
	return out
}

// readVersion is where objects' form at v is read: at v where served, as the server prunes a
// read by the asked version's schema. With conversion None, a deprecated v of the same schema,
// or a v new to the cluster, is read at the list version (no deprecated-API request). "" when
// only a webhook can produce v's form (the live one for an unserved v, or the new CRD's, not
// running yet), unless every object is stored at v already.
func readVersion(live, next *apiextensionsv1.CustomResourceDefinition, v string) string {
	lv := stages.SpecVersion(live, v)
	served := lv != nil && lv.Served
	if stages.ConvertsByWebhook(next) && !sameConverter(live, next) {
		if served && storedOnlyAt(live, v) {
			return v
		}
		return ""
	}
	if stages.ConvertsByWebhook(live) {
		if served {
			return v
		}
		return ""
	}
	list := usage.ListVersion(live)
	switch {
	case !served:
		return list
	case lv.Deprecated && equality.Semantic.DeepEqual(lv.Schema, schemaOf(live, list)):
		return list
	}
	return v
}

// sameConverter says whether two CRDs convert through the same webhook, caBundle aside (a
// cainjector keeps the live one; the manifest has none).
func sameConverter(a, b *apiextensionsv1.CustomResourceDefinition) bool {
	if !stages.ConvertsByWebhook(a) || !stages.ConvertsByWebhook(b) {
		return false
	}
	where := func(c *apiextensionsv1.CustomResourceConversion) any {
		if c.Webhook == nil || c.Webhook.ClientConfig == nil {
			return nil
		}
		cc := *c.Webhook.ClientConfig
		cc.CABundle = nil
		return cc
	}
	return equality.Semantic.DeepEqual(where(a.Spec.Conversion), where(b.Spec.Conversion))
}

// storedOnlyAt says whether every object of the CRD is stored at v.
func storedOnlyAt(crd *apiextensionsv1.CustomResourceDefinition, v string) bool {
	return stages.StorageVersion(crd) == v && slices.Equal(crd.Status.StoredVersions, []string{v})
}

// notVisible says whose form at v no check could see, and why: a question, not a finding.
func notVisible(live, next *apiextensionsv1.CustomResourceDefinition, v string) results.Finding {
	f := results.Finding{Severity: lifecycle.SeverityWarning, Kind: results.FindingObjects, CRD: next.Name, Version: v, Rule: "objectsNotVisible"}
	if stages.ConvertsByWebhook(next) && !sameConverter(live, next) {
		f.Message = fmt.Sprintf("live objects were not validated against the new schema of %s: the new CRD converts through a webhook (%s) that the cluster does not run yet, and only it produces their form at %s; not judged, neither passed nor refused",
			v, stages.ConversionSummary(next.Spec.Conversion), v)
		f.Fix = []lifecycle.Advice{{Text: "once the new converter runs, check again; after the upgrade, verify checks every object through it"}}
		return f
	}
	f.Message = fmt.Sprintf("live objects were not validated against %s: the cluster does not serve it yet and only the conversion webhook can produce its form", v)
	return f
}

// unreadable says the live objects could not be read: the conversion webhook failed. What
// needs them (clients, validation) is not judged; the rest of the check stands.
func unreadable(live *apiextensionsv1.CustomResourceDefinition, err error) results.Finding {
	return results.Finding{Severity: lifecycle.SeverityWarning, Kind: results.FindingObjects, CRD: live.Name, Rule: "objectsNotVisible",
		Message: fmt.Sprintf("the live objects could not be read: the cluster's conversion webhook (%s) failed; their clients and their validation against the new schemas are not judged, neither passed nor refused: %v",
			stages.ConversionSummary(live.Spec.Conversion), err),
		Fix: []lifecycle.Advice{{Text: "make the conversion webhook answer, then check again"}}}
}

func schemaOf(crd *apiextensionsv1.CustomResourceDefinition, v string) *apiextensionsv1.CustomResourceValidation {
	if sv := stages.SpecVersion(crd, v); sv != nil {
		return sv.Schema
	}
	return nil
}
