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

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/crvalidation"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// validateOptions tune validateObjects.
type validateOptions struct {
	PageSize int64
	// Progress, when set, hears objects validated and the estimated total.
	Progress func(done, total int64)
}

// validateObjects validates every live object of the CRD against each
// version of the new CRD manifest that has a schema, with the packages the
// API server's custom resource strategy runs (pruning, defaulting, OpenAPI
// schema, CEL rules, list-type invariants, ratcheting). Two levels:
//   - error: even an update that changes nothing is refused (ratcheting
//     does not let it through: a transition rule, say);
//   - warning: invalid under the new schema, let through while the field
//     stays as it is (validation ratcheting); it breaks the first time
//     someone edits it.
//
// and, before that, what the new schema prunes from each object
// (prunedFinding).
//
// Objects are read where readVersion says; a version new to the cluster
// whose form only a conversion webhook can produce cannot be seen: a
// warning says so.
//
// It also returns how many objects were validated at each version.
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
			// What the API server does to an object before it validates it.
			// What it prunes the object holds today under the live schema:
			// data the new schema does not keep.
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
		// The API server adds one error about the whole object when a
		// schema error kept it from running the CEL rules: say that once,
		// in words, rather than as "<nil>: Invalid value: null".
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

// prunedFinding is a live object holding fields the new schema of
// version does not list: the API server prunes them. Where objects are or
// will be stored at version (the new storage version, or one in
// status.storedVersions) the data is gone from every read once the CRD is
// applied and from etcd at the object's next write, migrate's re-store
// included: an error. At another version only its clients lose them: they
// read the object without them, and a write at it drops them.
func prunedFinding(live, next *apiextensionsv1.CustomResourceDefinition, version, object string, dropped []string) results.Finding {
	var paths []string
	for _, p := range dropped {
		if g := SchemaPath(p); !slices.Contains(paths, g) {
			paths = append(paths, g)
		}
	}
	f := results.Finding{Kind: results.FindingObjects, CRD: next.Name, Version: version, Rule: "objectLosesFields", Object: object,
		Path: strings.Join(paths, ", ")}
	if version == lifecycle.StorageVersion(next) || slices.Contains(live.Status.StoredVersions, version) {
		f.Severity = lifecycle.SeverityError
		f.Message = fmt.Sprintf("holds fields the new schema of %s does not list: once the CRD is applied the API server drops them from every read, and they are gone from etcd at the object's next write (migrate's re-store included)", version)
		f.Fix = []lifecycle.Advice{{Text: "keep the fields in the new schema (or under x-kubernetes-preserve-unknown-fields), or move what they hold into fields it keeps before applying"}}
	} else {
		f.Severity = lifecycle.SeverityWarning
		f.Message = fmt.Sprintf("holds fields the new schema of %s does not list: clients of %s read the object without them, and a write at %s drops them", version, version, version)
	}
	return f
}

// namedObjects is how many names a grouped finding shows before "and N
// more"; -o json has every one.
const namedObjects = 3

// groupObjects makes one finding of every finding about objects that says
// the same thing (severity, rule, version, path and message), in the order
// first seen, with every object it is about: 500 objects missing a new
// required field are one row, not 500.
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

// readVersion is where the objects' form at version v is read: at v where
// the cluster serves it, since the API server prunes what it reads by the
// schema of the version asked for. With conversion None, a deprecated v is
// read instead at a version the deprecated-API metric does not count when
// the two schemas are the same (the same object then, but for apiVersion),
// and a v new to the cluster at the version objects are listed at. "" when
// only a conversion webhook can produce v's form: the live one for a
// version it does not serve yet, or the one the new CRD brings (another
// service, or a webhook where the cluster converts by None), which is not
// running yet — but where every object is stored at v already, and needs
// no converter to be read there.
func readVersion(live, next *apiextensionsv1.CustomResourceDefinition, v string) string {
	lv := lifecycle.SpecVersion(live, v)
	served := lv != nil && lv.Served
	if lifecycle.ConvertsByWebhook(next) && !sameConverter(live, next) {
		if served && storedOnlyAt(live, v) {
			return v
		}
		return ""
	}
	if lifecycle.ConvertsByWebhook(live) {
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

// sameConverter says whether two CRDs convert through the same webhook (a
// caBundle aside: a cainjector keeps the live one, and the manifest has
// none).
func sameConverter(a, b *apiextensionsv1.CustomResourceDefinition) bool {
	if !lifecycle.ConvertsByWebhook(a) || !lifecycle.ConvertsByWebhook(b) {
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
	return lifecycle.StorageVersion(crd) == v && slices.Equal(crd.Status.StoredVersions, []string{v})
}

// notVisible says which objects' form at v no check could see, and why: it
// is no finding of the upgrade, but a question the check could not answer.
func notVisible(live, next *apiextensionsv1.CustomResourceDefinition, v string) results.Finding {
	f := results.Finding{Severity: lifecycle.SeverityWarning, Kind: results.FindingObjects, CRD: next.Name, Version: v, Rule: "objectsNotVisible"}
	if lifecycle.ConvertsByWebhook(next) && !sameConverter(live, next) {
		f.Message = fmt.Sprintf("live objects were not validated against the new schema of %s: the new CRD converts through a webhook (%s) that the cluster does not run yet, and only it produces their form at %s; not judged, neither passed nor refused",
			v, lifecycle.ConversionSummary(next.Spec.Conversion), v)
		f.Fix = []lifecycle.Advice{{Text: "once the new converter runs, check again; after the upgrade, verify checks every object through it"}}
		return f
	}
	f.Message = fmt.Sprintf("live objects were not validated against %s: the cluster does not serve it yet and only the conversion webhook can produce its form", v)
	return f
}

// unreadable says that the live objects could not be read at all: the
// cluster's conversion webhook failed (not deployed, not answering). What
// needs the objects — their clients, their validation against the new
// schemas — is not judged; the rest of the check stands.
func unreadable(live *apiextensionsv1.CustomResourceDefinition, err error) results.Finding {
	return results.Finding{Severity: lifecycle.SeverityWarning, Kind: results.FindingObjects, CRD: live.Name, Rule: "objectsNotVisible",
		Message: fmt.Sprintf("the live objects could not be read: the cluster's conversion webhook (%s) failed; their clients and their validation against the new schemas are not judged, neither passed nor refused: %v",
			lifecycle.ConversionSummary(live.Spec.Conversion), err),
		Fix: []lifecycle.Advice{{Text: "make the conversion webhook answer, then check again"}}}
}

func schemaOf(crd *apiextensionsv1.CustomResourceDefinition, v string) *apiextensionsv1.CustomResourceValidation {
	if sv := lifecycle.SpecVersion(crd, v); sv != nil {
		return sv.Schema
	}
	return nil
}
