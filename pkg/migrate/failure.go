package migrate

import (
	"errors"
	"net"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Failure is one object the migration could not re-store.
type Failure struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Code      int32  `json:"code"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
}

func failureOf(ns, name string, err error) Failure {
	f := Failure{Namespace: ns, Name: name, Message: err.Error()}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		f.Code, f.Reason, f.Message = s.Code, string(s.Reason), s.Message
	}
	return f
}

// objectGone tells a 404 about the object (deleted since listed: done)
// from a 404 about its resource, which a server answers while it does not
// serve it (yet): kube-apiserver answers 503 until it knows every CRD, but
// a proxy or an older server may not, and taking that for "deleted" would
// let storedVersions be pruned over an object never re-stored. The
// resource's 404 carries no Status, so client-go's generic message.
func objectGone(err error) bool {
	var status apierrors.APIStatus
	return apierrors.IsNotFound(err) && errors.As(err, &status) &&
		!strings.HasPrefix(status.Status().Message, genericNotFound)
}

// genericNotFound starts the message client-go gives a 404 without a Status.
const genericNotFound = "the server could not find the requested resource"

// isConversionFailure tells a failing conversion webhook: the API server
// answers 500 with the webhook named in the message.
func isConversionFailure(err error) bool {
	return err != nil && strings.Contains(err.Error(), "conversion webhook")
}

// isTransient tells errors worth retrying: the server is busy, restarting
// or unreachable for a moment. A conversion failure is not retried: rule 7
// wants writing to stop, not to hammer a broken webhook. Nor is any other
// 500: it is about the object (too large for etcd, say) and would fail again.
func isTransient(err error) bool {
	if err == nil || isConversionFailure(err) {
		return false
	}
	if apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsServiceUnavailable(err) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "connection refused") || strings.Contains(msg, "connection reset") || strings.Contains(msg, "EOF")
}
