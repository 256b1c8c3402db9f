package pass

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// What the API server says when a webhook answered "no", and when it could
// not call the webhook or read its answer (words of webhook_converter.go
// and of client-go's REST client).
func TestIsConversionRefusal(t *testing.T) {
	const prefix = "conversion webhook for example.com/v1, Kind=Widget failed: "
	for _, tc := range []struct {
		msg  string
		want bool
	}{
		{prefix + "spec.extra has no form at v1beta1", true},
		{prefix + "response.result.status was 'Failure', not 'Success'", true},
		{prefix + `Post "https://127.0.0.1:4443/convert?timeout=30s": dial tcp 127.0.0.1:4443: connect: connection refused`, false},
		{prefix + `Post "https://conv.default.svc:443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate signed by unknown authority`, false},
		{prefix + `Post "https://conv.default.svc:443/convert?timeout=30s": context deadline exceeded`, false},
		{prefix + "the server could not find the requested resource", false},
		{prefix + `expected response.uid="1", got "2"`, false},
		{"conversion webhook for example.com/v1, Kind=Widget returned 2 objects, expected 3", false},
		{"widgets.example.com \"w\" not found", false},
	} {
		err := apierrors.NewInternalError(errors.New(tc.msg))
		if got := IsConversionRefusal(err); got != tc.want {
			t.Errorf("%q: refusal %v, want %v", tc.msg, got, tc.want)
		}
	}
}
