package cluster

import (
	"context"
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/transport"
)

// HandlerKnowsEveryField asks the custom resource handler behind route whether its schema of
// group/version declares every field of obj (JSON, named name, which no object has): a
// server-side dry-run PUT with fieldValidation=Strict. The handler decodes the body against
// its own schema before anything else, then finds no object of the name: "unknown field" says
// its schema lacks a path; not found (or any answer past decoding) says it has them all. A
// handler that does not serve the version at all knows none. Nothing is written; no
// admission webhook is called for an object that does not exist.
func (c Clients) HandlerKnowsEveryField(ctx context.Context, route *transport.Route, group, version, plural, namespace, name string, obj []byte) (bool, error) {
	if c.objectsREST == nil {
		return false, transport.ErrNoRoutes
	}
	path := []string{"/apis", group, version}
	if namespace != "" {
		path = append(path, "namespaces", namespace)
	}
	// No retry after a 429: a throttled server is not asked (the caller says so) rather than
	// waited on for every show, which under one seat of priority and fairness took minutes.
	err := c.objectsREST.Put().MaxRetries(0).AbsPath(append(path, plural, name)...).
		Param("dryRun", metav1.DryRunAll).Param("fieldValidation", metav1.FieldValidationStrict).
		SetHeader("Content-Type", "application/json").Body(obj).
		Do(transport.WithRoute(ctx, route)).Error()
	var status apierrors.APIStatus
	switch {
	case err == nil:
		// An object of the name after all: the dry run decoded it.
		return true, nil
	case apierrors.IsBadRequest(err) && strings.Contains(err.Error(), "strict decoding error"):
		return false, nil
	case apierrors.IsNotFound(err) && errors.As(err, &status):
		// Not found by its name: decoded. Not found without it: the version is not served here.
		d := status.Status().Details
		return d != nil && d.Name == name, nil
	case apierrors.IsConflict(err), apierrors.IsInvalid(err), apierrors.IsAlreadyExists(err):
		return true, nil
	}
	// Forbidden (no update on the resource) comes before decoding: the handler was not asked.
	return false, err
}
