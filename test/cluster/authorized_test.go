package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// waitBound waits until the authorizer grants the ServiceAccount what each
// of its bindings grants: RBAC decides from caches of roles and bindings
// that follow their writes a moment later, and a plugin run started at
// once could still be refused.
func (e *env) waitBound(namespace, sa string) {
	e.t.Helper()
	ctx := e.t.Context()
	subject := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Namespace == namespace && s.Name == sa
		})
	}
	var checks []authorizationv1.ResourceAttributes
	crbs, err := e.kube.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, b := range crbs.Items {
		if subject(b.Subjects) {
			checks = append(checks, e.grants(b.RoleRef, "")...)
		}
	}
	rbs, err := e.kube.RbacV1().RoleBindings("").List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, b := range rbs.Items {
		if subject(b.Subjects) {
			checks = append(checks, e.grants(b.RoleRef, b.Namespace)...)
		}
	}
	user := "system:serviceaccount:" + namespace + ":" + sa
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	var denied string
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, a := range checks {
			r, err := e.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &a}}, metav1.CreateOptions{})
			if err != nil {
				return false, err
			}
			if !r.Status.Allowed {
				denied = fmt.Sprintf("%+v", a)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		e.t.Fatalf("%s is not granted what its bindings say: %s (%v)", user, denied, err)
	}
}

// grants are the requests a role allows, one per verb, resource and group
// of each of its rules, in namespace ("" for cluster-wide).
func (e *env) grants(ref rbacv1.RoleRef, namespace string) []authorizationv1.ResourceAttributes {
	e.t.Helper()
	var rules []rbacv1.PolicyRule
	switch ref.Kind {
	case "ClusterRole":
		r, err := e.kube.RbacV1().ClusterRoles().Get(e.t.Context(), ref.Name, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		rules = r.Rules
	default:
		r, err := e.kube.RbacV1().Roles(namespace).Get(e.t.Context(), ref.Name, metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		rules = r.Rules
	}
	var out []authorizationv1.ResourceAttributes
	for _, rule := range rules {
		name := ""
		if len(rule.ResourceNames) > 0 {
			name = rule.ResourceNames[0]
		}
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, v := range rule.Verbs {
					out = append(out, authorizationv1.ResourceAttributes{Namespace: namespace, Verb: v, Group: g, Resource: resource, Subresource: sub, Name: name})
				}
			}
		}
	}
	return out
}
