package render

import (
	"errors"
	"fmt"
	"net/url"
	"syscall"
	"testing"
)

func TestErrorMessageSpeaksLikeKubectl(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/apis/apiextensions.k8s.io/v1/customresourcedefinitions", Err: fmt.Errorf("dial tcp 127.0.0.1:6443: connect: %w", syscall.ECONNREFUSED)}
	timeout := &url.Error{Op: "Get", URL: "https://10.0.0.1:443/api", Err: errors.New("dial tcp 10.0.0.1:443: i/o timeout")}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("listing CustomResourceDefinitions: %w", refused), "The connection to the server 127.0.0.1:6443 was refused - did you specify the right host or port?"},
		{timeout, "Unable to connect to the server: dial tcp 10.0.0.1:443: i/o timeout"},
		{errors.New("widgets.example.com has no version v9"), "widgets.example.com has no version v9"},
	} {
		if got := ErrorMessage(tc.err); got != tc.want {
			t.Errorf("ErrorMessage(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
