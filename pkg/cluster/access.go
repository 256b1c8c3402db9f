package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// Permission is one thing a command needs the API server to allow. An
// empty Namespace of a namespaced resource means every namespace.
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

// Missing asks the API server which of the permissions the user lacks, one
// SelfSubjectAccessReview each, at once. ok is false where the server
// cannot say (it serves no authorization API, as an API server for CRDs
// alone, the review refused, or failing for a moment): the requests will
// tell then, as they did before any was asked.
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
