package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Permission is one thing a command needs allowed; an empty Namespace means every namespace.
type Permission struct {
	Verb        string
	Group       string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
}

// String names it the way RBAC rules and the API server's 403 do.
func (p Permission) String() string {
	res := p.Resource
	if p.Subresource != "" {
		res += "/" + p.Subresource
	}
	group := p.Group
	if group == "" {
		group = "core"
	}
	s := fmt.Sprintf("%s %s (%s)", p.Verb, res, group)
	if p.Name != "" {
		s += " " + p.Name
	}
	if p.Namespace != "" {
		s += " in namespace " + p.Namespace
	}
	return s
}

// Missing asks the API server (a SelfSubjectAccessReview each, at once) which permissions
// the user lacks. ok is false where it cannot say (no authorization API, the review refused
// or failing): the requests themselves will tell then.
func Missing(ctx context.Context, c authorizationclient.SelfSubjectAccessReviewsGetter, perms []Permission) (missing []Permission, ok bool) {
	allowed := make([]bool, len(perms))
	unknown := make([]bool, len(perms))
	var wg sync.WaitGroup
	for i, p := range perms {
		wg.Go(func() {
			review, err := c.SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Namespace: p.Namespace, Name: p.Name,
				}},
			}, metav1.CreateOptions{})
			if err != nil {
				unknown[i] = true
				return
			}
			// An authorizer that could not decide is not a denial.
			allowed[i] = review.Status.Allowed || review.Status.EvaluationError != ""
		})
	}
	wg.Wait()
	for i, p := range perms {
		if unknown[i] {
			return nil, false
		}
		if !allowed[i] {
			missing = append(missing, p)
		}
	}
	return missing, true
}

// Describe lists permissions for a sentence.
func Describe(perms []Permission) string {
	s := make([]string, len(perms))
	for i, p := range perms {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// ForbiddenError: the user lacks a permission, found by asking before anything was written.
type ForbiddenError struct {
	Operation string
	CRD       string
	Missing   []Permission
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("you may not %s %s: missing permission to %s; nothing was written",
		e.Operation, e.CRD, Describe(e.Missing))
}

const crdGroup, crdResource = "apiextensions.k8s.io", "customresourcedefinitions"

// CRDPermission is verb on CustomResourceDefinitions (subresource and name "" for any).
func CRDPermission(verb, subresource, name string) Permission {
	return Permission{Verb: verb, Group: crdGroup, Resource: crdResource, Subresource: subresource, Name: name}
}

func objectsPermission(crd *apiextensionsv1.CustomResourceDefinition, verb string) Permission {
	return Permission{Verb: verb, Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
}

// Access is what an operation needs the API server to allow.
type Access struct {
	// Op names the operation in a refusal ("migrate").
	Op   string
	Need []Permission
	// ObjectVerbs are needed on the CRD's objects in every namespace.
	ObjectVerbs []string
	// WriteVerbs are needed too, but for a namespaced CRD a pass may go on without them in
	// some namespaces, reporting each object it may not write and pruning nothing. Never list.
	WriteVerbs []string
}

// RequireAccess asks, before anything is written, whether the user may do all a needs.
// notify hears of permissions a partial pass goes on without.
func RequireAccess(ctx context.Context, c Clients, crd *apiextensionsv1.CustomResourceDefinition, a Access, notify func(string)) error {
	if c.Access == nil {
		return nil
	}
	perms := append([]Permission{}, a.Need...)
	for _, v := range append(append([]string{}, a.ObjectVerbs...), a.WriteVerbs...) {
		perms = append(perms, objectsPermission(crd, v))
	}
	missing, ok := Missing(ctx, c.Access, perms)
	if !ok || len(missing) == 0 {
		return nil
	}
	var hard, soft []Permission
	for _, p := range missing {
		if slices.Contains(a.WriteVerbs, p.Verb) && p.Group == crd.Spec.Group && p.Resource == crd.Spec.Names.Plural && crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
			soft = append(soft, p)
		} else {
			hard = append(hard, p)
		}
	}
	if len(hard) > 0 {
		return &ForbiddenError{Operation: a.Op, CRD: crd.Name, Missing: missing}
	}
	if notify != nil {
		notify(fmt.Sprintf("%s: you may not %s in every namespace: each object you may not write is reported as failed, and storedVersions is not pruned", crd.Name, Describe(soft)))
	}
	return nil
}
