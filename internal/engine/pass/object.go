package pass

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ObjectGone tells the object's own NotFound (deleted since listed: done) from any other 404: a
// server not serving the resource yet (taken for "deleted", storedVersions could be pruned over
// an object never re-stored) or an admission webhook's denial, which may carry any code.
func ObjectGone(err error, gr schema.GroupResource, name string) bool {
	s, ok := apiStatus(err)
	return ok && apierrors.IsNotFound(err) && s.Details != nil && s.Details.Name == name &&
		s.Message == fmt.Sprintf("%s %q not found", gr, name)
}

// RealConflict tells an optimistic-concurrency conflict on the object (written since listed, so
// re-encoded already) from a denial that only carries the code 409.
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
