package migration

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

func failureOf(ns, name string, err error) results.Failure {
	f := results.Failure{Namespace: ns, Name: name, Message: err.Error()}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		f.Code, f.Reason, f.Message = s.Code, string(s.Reason), s.Message
	}
	return f
}
