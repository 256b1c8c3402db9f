package pass

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ObjectGone tells the object's own NotFound (deleted since listed: done)
// from every other 404: the resource's (a server not serving it yet answers
// without a Status, and taking that for "deleted" would let storedVersions
// be pruned over an object never re-stored) and an admission webhook's
// denial, which may carry any code. The registry's NotFound names the
// object in its details and says exactly "<resource> "<name>" not found".
func ObjectGone(err error, gr schema.GroupResource, name string) bool {
	s, ok := apiStatus(err)
	return ok && apierrors.IsNotFound(err) && s.Details != nil && s.Details.Name == name &&
		s.Message == fmt.Sprintf("%s %q not found", gr, name)
}

// RealConflict tells an optimistic-concurrency conflict on the object
// (someone wrote it after it was listed, so it is re-encoded already) from a
// denial that only carries the code 409.
func RealConflict(err error, gr schema.GroupResource, name string) bool {
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
