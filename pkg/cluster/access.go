package cluster

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// alone, or the review itself is refused): the requests will tell then.
func Missing(ctx context.Context, c authorizationclient.SelfSubjectAccessReviewsGetter, perms []Permission) (missing []Permission, ok bool, err error) {
	allowed := make([]bool, len(perms))
	unknown := make([]bool, len(perms))
	var g errgroup.Group
	for i, p := range perms {
		g.Go(func() error {
			review, err := c.SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Namespace: p.Namespace, Name: p.Name,
				}},
			}, metav1.CreateOptions{})
			switch {
			case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
				unknown[i] = true
				return nil
			case err != nil:
				return fmt.Errorf("asking the API server whether you may %s: %w", p, err)
			}
			allowed[i] = review.Status.Allowed
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, false, err
	}
	for i, p := range perms {
		if unknown[i] {
			return nil, false, nil
		}
		if !allowed[i] {
			missing = append(missing, p)
		}
	}
	return missing, true, nil
}

// Describe lists permissions for a sentence.
func Describe(perms []Permission) string {
	s := make([]string, len(perms))
	for i, p := range perms {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
