package migrate

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func failureOf(ns, name string, err error) Failure {
	f := Failure{Namespace: ns, Name: name, Message: err.Error()}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		f.Code, f.Reason, f.Message = s.Code, string(s.Reason), s.Message
	}
	return f
}

// objectGone tells the object's own NotFound (deleted since listed: done)
// from every other 404: the resource's (a server not serving it yet answers
// without a Status, and taking that for "deleted" would let storedVersions
// be pruned over an object never re-stored) and an admission webhook's
// denial, which may carry any code. The registry's NotFound names the
// object in its details and says exactly "<resource> "<name>" not found".
func objectGone(err error, gr schema.GroupResource, name string) bool {
	s, ok := apiStatus(err)
	return ok && apierrors.IsNotFound(err) && s.Details != nil && s.Details.Name == name &&
		s.Message == fmt.Sprintf("%s %q not found", gr, name)
}

// realConflict tells an optimistic-concurrency conflict on the object
// (someone wrote it after it was listed, so it is re-encoded already) from a
// denial that only carries the code 409.
func realConflict(err error, gr schema.GroupResource, name string) bool {
	s, ok := apiStatus(err)
	return ok && s.Reason == metav1.StatusReasonConflict && s.Details != nil && s.Details.Name == name &&
		strings.HasPrefix(s.Message, fmt.Sprintf("Operation cannot be fulfilled on %s %q: ", gr, name))
}

func apiStatus(err error) (metav1.Status, bool) {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return metav1.Status{}, false
	}
	return status.Status(), true
}
