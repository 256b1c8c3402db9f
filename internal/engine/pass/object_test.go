package pass

import (
	"errors"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var widgetsGR = schema.GroupResource{Group: "example.com", Resource: "widgets"}

// denied is what the API server makes of an admission webhook that denies a
// request with the code it chose: the webhook's reason and details, the
// message prefixed with its name.
func denied(code int32, reason metav1.StatusReason, details *metav1.StatusDetails) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason, Details: details,
		Message: `admission webhook "deny.example.com" denied the request: not now`}}
}

func TestOutcomeOfErrors(t *testing.T) {
	own := &metav1.StatusDetails{Name: "w-1", Group: "example.com", Kind: "widgets"}
	for _, tc := range []struct {
		name               string
		err                error
		gone, conflictDone bool
	}{
		{"the object was deleted", apierrors.NewNotFound(widgetsGR, "w-1"), true, false},
		{"another object's NotFound", apierrors.NewNotFound(widgetsGR, "w-2"), false, false},
		// What client-go makes of a 404 "page not found": the resource is
		// not served there, the object may well exist.
		{"the resource is not served", apierrors.NewGenericServerResponse(http.StatusNotFound, "patch", widgetsGR, "w-1", "404 page not found", 0, true), false, false},
		{"a webhook denial with 404", denied(http.StatusNotFound, metav1.StatusReasonNotFound, own), false, false},
		{"a webhook denial with 404 and no reason", denied(http.StatusNotFound, "", nil), false, false},
		{"the object changed meanwhile", apierrors.NewConflict(widgetsGR, "w-1", errors.New("the object has been modified")), false, true},
		{"a webhook denial with 409", denied(http.StatusConflict, metav1.StatusReasonConflict, own), false, false},
		{"a webhook denial with 409 and no reason", denied(http.StatusConflict, "", nil), false, false},
		{"not an API error", errors.New("EOF"), false, false},
	} {
		if got := ObjectGone(tc.err, widgetsGR, "w-1"); got != tc.gone {
			t.Errorf("%s: ObjectGone = %v, want %v (%v)", tc.name, got, tc.gone, tc.err)
		}
		if got := RealConflict(tc.err, widgetsGR, "w-1"); got != tc.conflictDone {
			t.Errorf("%s: RealConflict = %v, want %v (%v)", tc.name, got, tc.conflictDone, tc.err)
		}
	}
}
