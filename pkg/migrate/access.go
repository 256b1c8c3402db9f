package migrate

import (
	"context"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/cluster"
)

// ForbiddenError: the user lacks a permission the operation needs; it was
// found before anything was written, by asking the API server.
type ForbiddenError struct {
	Operation string
	CRD       string
	Missing   []cluster.Permission
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("you may not %s %s: missing permission to %s (deploy/rbac/ holds a ClusterRole for each command); nothing was written",
		e.Operation, e.CRD, cluster.Describe(e.Missing))
}

const crdGroup, crdResource = "apiextensions.k8s.io", "customresourcedefinitions"

func crdPermission(verb, subresource, name string) cluster.Permission {
	return cluster.Permission{Verb: verb, Group: crdGroup, Resource: crdResource, Subresource: subresource, Name: name}
}

func objectsPermission(crd *apiextensionsv1.CustomResourceDefinition, verb string) cluster.Permission {
	return cluster.Permission{Verb: verb, Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
}

// access is what an operation needs the API server to allow.
type access struct {
	op   string
	need []cluster.Permission
	// objectVerbs are needed on the CRD's objects in every namespace.
	objectVerbs []string
	// writeVerbs are needed on them too, but for a namespaced CRD not in
	// every namespace: a user may be allowed them in some only, and a pass
	// then reports each object it may not write (and prunes nothing). Its
	// list is always across namespaces, so list is never among them.
	writeVerbs []string
}

// requireAccess asks, before anything is written, whether the user may do
// what a needs: each of need, and the verbs on the CRD's objects in every
// namespace. notify hears of permissions a partial pass goes on without.
func requireAccess(ctx context.Context, c Clients, crd *apiextensionsv1.CustomResourceDefinition, a access, notify func(string)) error {
	if c.Access == nil {
		return nil
	}
	perms := append([]cluster.Permission{}, a.need...)
	for _, v := range append(append([]string{}, a.objectVerbs...), a.writeVerbs...) {
		perms = append(perms, objectsPermission(crd, v))
	}
	missing, ok := cluster.Missing(ctx, c.Access, perms)
	if !ok || len(missing) == 0 {
		return nil
	}
	var hard, soft []cluster.Permission
	for _, p := range missing {
		if slices.Contains(a.writeVerbs, p.Verb) && p.Group == crd.Spec.Group && p.Resource == crd.Spec.Names.Plural && crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
			soft = append(soft, p)
		} else {
			hard = append(hard, p)
		}
	}
	if len(hard) > 0 {
		return &ForbiddenError{Operation: a.op, CRD: crd.Name, Missing: missing}
	}
	if notify != nil {
		notify(fmt.Sprintf("%s: you may not %s in every namespace: each object you may not write is reported as failed, and storedVersions is not pruned", crd.Name, cluster.Describe(soft)))
	}
	return nil
}
