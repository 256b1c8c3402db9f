package migration

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// storageDefaults are the defaults the storage version adds to objects
// stored at an old version, and what tells a generation they move from one
// moved by anything else (mutating admission): the write's own answer,
// whole, compared with the object as read before it. Only with conversion
// None do both show the same fields by the same names.
type storageDefaults struct {
	// fields the storage version defaults where an old version does not.
	fields []string
	dyn    dynamic.Interface // nil: the answers are not compared
	gvr    schema.GroupVersionResource
	// schemas by apiVersion, the storage version's apart: its defaults fill fields in.
	schemas map[string]*apiextensionsv1.JSONSchemaProps
	storage *apiextensionsv1.JSONSchemaProps

	mu      sync.Mutex
	written map[string]*results.DefaultWritten
}

func newStorageDefaults(dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition, fields []string) *storageDefaults {
	if len(fields) == 0 {
		return nil
	}
	d := &storageDefaults{fields: fields, gvr: storageGVR(crd), written: map[string]*results.DefaultWritten{}}
	if stages.ConvertsByWebhook(crd) {
		// A converter may rename or move fields: no field-by-field comparison holds.
		return d
	}
	d.dyn, d.storage, d.schemas = dyn, schemacompat.SchemaOf(crd, d.gvr.Version), map[string]*apiextensionsv1.JSONSchemaProps{}
	for _, v := range crd.Spec.Versions {
		d.schemas[schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}.String()] = schemacompat.SchemaOf(crd, v.Name)
	}
	return d
}

// compares reports whether it's write answers whole: read whole, and comparable.
func (d *storageDefaults) compares(it item) bool {
	return d != nil && d.dyn != nil && it.obj != nil
}

// restoreWhole is the re-store's write with the whole object in the answer: the
// same request as the metadata client's, a larger answer.
func (d *storageDefaults) restoreWhole(ctx context.Context, it item, patch []byte, opts metav1.PatchOptions) (*metav1.PartialObjectMetadata, *unstructured.Unstructured, error) {
	u, err := d.dyn.Resource(d.gvr).Namespace(it.Namespace).Patch(ctx, it.Name, types.MergePatchType, patch, opts)
	if err != nil {
		return nil, nil, err
	}
	m := &metav1.PartialObjectMetadata{}
	m.Namespace, m.Name, m.UID, m.ResourceVersion = u.GetNamespace(), u.GetName(), u.GetUID(), u.GetResourceVersion()
	m.Generation, m.Labels, m.Annotations = u.GetGeneration(), u.GetLabels(), u.GetAnnotations()
	m.Finalizers, m.ManagedFields = u.GetFinalizers(), u.GetManagedFields()
	return m, u, nil
}

// defaultsSeen is what a write's answer shows of the storage version's defaults.
type defaultsSeen struct {
	// fields the storage version defaults (the notice's), nil if none.
	fields []string
	// filled, where set, are the only fields the write changed, each filled
	// with the default a schema gives it where the object read lacked it.
	filled []results.FieldDiff
	// other says, where the generation moved and filled is empty, why the
	// defaults are not shown to be the cause.
	other string
}

// seen compares the object read with the write's whole answer (nil where
// the write did not answer whole).
func (d *storageDefaults) seen(read, answer *unstructured.Unstructured) defaultsSeen {
	if d == nil {
		return defaultsSeen{}
	}
	s := defaultsSeen{fields: d.fields}
	switch {
	case d.dyn == nil:
		s.other = "a conversion webhook stands between the versions, so the write's answer is not compared field by field with the object read"
	case read == nil || answer == nil:
		s.other = "the object was not read whole before this write, so its answer is not compared with it"
	default:
		s.filled, s.other = filledByDefaults(read.Object, answer.Object, d.schemas[read.GetAPIVersion()], d.storage)
	}
	return s
}

// filledByDefaults lists what the write changed when it is only fields the
// object read lacked, filled with a schema's default (at: the schema of the
// version read, storage: the storage version's); else why not.
func filledByDefaults(read, answer map[string]any, at, storage *apiextensionsv1.JSONSchemaProps) ([]results.FieldDiff, string) {
	content := func(o map[string]any) map[string]any {
		out := make(map[string]any, len(o))
		for k, v := range o {
			if k != "apiVersion" && k != "metadata" {
				out[k] = v
			}
		}
		return out
	}
	d := schemacompat.RoundTripDiff(content(read), content(answer), at, storage)
	var other []string
	for _, f := range append(d.Lost, d.EmptyDropped...) {
		other = append(other, f.Path+" "+f.Before+" → "+f.After)
	}
	switch {
	case len(other) > 0:
		slices.Sort(other)
		return nil, "the write also changed " + strings.Join(other, ", ") + ", which no default explains"
	case len(d.Defaulted) == 0:
		return nil, "the write's answer shows no default filled in"
	}
	return d.Defaulted, ""
}

// elements spells list elements in a path as [*], as the notice names fields.
var elements = regexp.MustCompile(`\[[^'\]][^\]]*\]`)

// count adds one object's filled fields to what the pass wrote, each once.
func (d *storageDefaults) count(filled []results.FieldDiff) {
	d.mu.Lock()
	defer d.mu.Unlock()
	once := map[string]bool{}
	for _, f := range filled {
		field := elements.ReplaceAllString(f.Path, "[*]")
		key := field + "=" + f.After
		if once[key] {
			continue
		}
		once[key] = true
		w := d.written[key]
		if w == nil {
			w = &results.DefaultWritten{Field: field, Default: f.After}
			d.written[key] = w
		}
		w.Objects++
	}
}

// counted is what the passes wrote, by field.
func (d *storageDefaults) counted() []results.DefaultWritten {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []results.DefaultWritten
	for _, w := range d.written {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b results.DefaultWritten) int {
		if c := strings.Compare(a.Field, b.Field); c != 0 {
			return c
		}
		return strings.Compare(a.Default, b.Default)
	})
	return out
}

// defaultsNotice says, before the first write, each default the re-store
// writes into the objects stored at from that lack the field.
func defaultsNotice(crd *apiextensionsv1.CustomResourceDefinition, name, storage string, fields, from []string) string {
	values := schemacompat.DefaultValues(crd, storage, fields)
	named := make([]string, len(fields))
	for i, f := range fields {
		named[i] = f
		if v, ok := values[f]; ok {
			named[i] = f + "=" + v
		}
	}
	return fmt.Sprintf("%s: re-storing writes the storage version %s's defaults (%s), which the schema of %s does not default, into each object stored there that lacks them: "+
		"no value is lost, but each such object's generation moves; a generation moved by these defaults alone needs no attention, any other change does; --dry-run=server names those objects without writing",
		name, storage, strings.Join(named, ", "), strings.Join(from, ", "))
}
