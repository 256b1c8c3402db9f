package releases

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/schemacompat"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
)

// namespace holds every namespaced object (the sandbox serves no
// Namespace API and takes any name).
const namespace = "releases"

// probe is one object a client applied server-side at one version: its
// managedFields name that version, as a client's do.
type probe struct {
	crd     *apiextensionsv1.CustomResourceDefinition
	version string
	name    string
	body    map[string]any
}

func (p probe) String() string {
	return fmt.Sprintf("%s %s (applied at %s)", p.crd.Spec.Names.Plural, p.name, p.version)
}

// createProbes applies, for every CRD and every version it serves, the
// smallest object the schema takes (schemacompat.MinimalObject), at that
// version. An object the API server refuses (a pattern, a CEL rule the
// generator cannot satisfy; a version only a converter not running here
// can store) is left out and said.
func createProbes(ctx context.Context, c fixtures.Clients, crds []*apiextensionsv1.CustomResourceDefinition) (made []probe, skipped []string) {
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			p := probe{crd: crd, version: v.Name, name: "probe-" + strings.ReplaceAll(v.Name, ".", "-")}
			p.body = schemacompat.MinimalObject(crd, v.Name, p.name, namespace)
			if err := applyObject(ctx, c, p, p.body); err != nil {
				skipped = append(skipped, fmt.Sprintf("%s: %v", p, err))
				continue
			}
			made = append(made, p)
		}
	}
	return made, skipped
}

func (p probe) resource(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: p.crd.Spec.Group, Version: version, Resource: p.crd.Spec.Names.Plural}
}

func (p probe) namespace() string {
	if p.crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		return namespace
	}
	return ""
}

// applyObject applies body as `kubectl apply --server-side` does, at the
// version body names.
func applyObject(ctx context.Context, c fixtures.Clients, p probe, body map[string]any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	gv, err := schema.ParseGroupVersion(body["apiVersion"].(string))
	if err != nil {
		return err
	}
	_, err = c.Dynamic.Resource(p.resource(gv.Version)).Namespace(p.namespace()).Patch(ctx, p.name, types.ApplyPatchType, b, metav1.PatchOptions{FieldManager: installer})
	return err
}
