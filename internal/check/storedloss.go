package check

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// storedFieldsLost reads objects possibly stored at each old stored version at that version,
// where served, and names what the new storage schema prunes: read elsewhere, what only the
// old version holds does not show (reads are pruned by the asked version's schema), yet the
// first write at the new storage drops it. Conversion None only: a webhook's form is its own.
func storedFieldsLost(ctx context.Context, dyn dynamic.Interface, live, next *apiextensionsv1.CustomResourceDefinition, pageSize int64) ([]results.Finding, error) {
	storage := stages.StorageVersion(next)
	sv := stages.SpecVersion(next, storage)
	if stages.ConvertsByWebhook(live) || stages.ConvertsByWebhook(next) || sv == nil || sv.Schema == nil || sv.Schema.OpenAPIV3Schema == nil {
		return nil, nil
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(sv.Schema.OpenAPIV3Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("%s %s: %w", next.Name, storage, err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", next.Name, storage, err)
	}
	var out []results.Finding
	for _, v := range live.Status.StoredVersions {
		lv := stages.SpecVersion(live, v)
		switch {
		case v == storage || lv == nil || !lv.Served:
			continue
		case lv.Deprecated && equality.Semantic.DeepEqual(lv.Schema, schemaOf(live, usage.ListVersion(live))):
			// Same form as the list version the object validation reads: nothing more to
			// see, and a read at a deprecated version counts as a client of it.
			continue
		}
		gvr := schema.GroupVersionResource{Group: live.Spec.Group, Version: v, Resource: live.Spec.Names.Plural}
		_, err := cluster.ListObjectPages(ctx, dyn, gvr, max(pageSize, 1), func(page cluster.ObjectPage) error {
			for i := range page.Items {
				obj := page.Items[i].Object
				if dropped := pruning.PruneWithOptions(obj, structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}); len(dropped) > 0 {
					name := page.Items[i].GetName()
					if ns := page.Items[i].GetNamespace(); ns != "" {
						name = ns + "/" + name
					}
					out = append(out, prunedFinding(live, next, storage, name, dropped))
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s at %s: %w", live.Name, v, err)
		}
	}
	return out, nil
}

// mergeObjects folds found into grouped where a finding says the same: each object named once.
func mergeObjects(grouped, found []results.Finding) []results.Finding {
	for _, g := range groupObjects(found) {
		i := slices.IndexFunc(grouped, func(f results.Finding) bool {
			return f.Kind == g.Kind && f.Severity == g.Severity && f.Rule == g.Rule && f.Version == g.Version && f.Path == g.Path && f.Message == g.Message
		})
		if i < 0 {
			grouped = append(grouped, g)
			continue
		}
		for _, o := range g.Objects {
			if !slices.Contains(grouped[i].Objects, o) {
				grouped[i].Objects = append(grouped[i].Objects, o)
			}
		}
		grouped[i].Count = len(grouped[i].Objects)
		grouped[i].Object = firstNames(grouped[i].Objects)
	}
	return grouped
}
