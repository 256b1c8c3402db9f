package migrate

import (
	"errors"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestObjectGone(t *testing.T) {
	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the object was deleted", apierrors.NewNotFound(widgets, "w-1"), true},
		// What client-go makes of a 404 "page not found": the resource is
		// not served there, the object may well exist.
		{"the resource is not served", apierrors.NewGenericServerResponse(http.StatusNotFound, "patch", widgets, "w-1", "404 page not found", 0, true), false},
		{"a conflict", apierrors.NewConflict(widgets, "w-1", errors.New("changed")), false},
		{"not an API error", errors.New("EOF"), false},
	} {
		if got := objectGone(tc.err); got != tc.want {
			t.Errorf("%s: objectGone = %v, want %v (%v)", tc.name, got, tc.want, tc.err)
		}
	}
}
