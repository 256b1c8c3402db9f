package migrate_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// slowWrite is a PATCH whose headers reach the API server at once and whose
// body only when the test releases it. The API server binds a request to
// the CRD's storage as the request arrives, so the write lands at the
// storage version of that moment, however late its body comes: no webhook
// is needed, a slow client does it.
type slowWrite struct {
	body   *io.PipeWriter
	patch  []byte
	answer chan error
}

// startSlowPatch sends the PATCH's headers and returns once the API server
// has begun to read its body: by then the request holds its storage.
func startSlowPatch(t *testing.T, cfg *rest.Config, gvr schema.GroupVersionResource, ns, name string, patch []byte) *slowWrite {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	// HTTP/1.1: its 100 Continue is what tells the handler is reading.
	cfg.NextProtos = []string{"http/1.1"}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, w := io.Pipe()
	url := fmt.Sprintf("%s/apis/%s/%s/namespaces/%s/%s/%s", cfg.Host, gvr.Group, gvr.Version, ns, gvr.Resource, name)
	reading := make(chan struct{})
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, _ textproto.MIMEHeader) error {
		if code == http.StatusContinue {
			close(reading)
		}
		return nil
	}}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodPatch, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(patch))
	req.Header.Set("Content-Type", "application/merge-patch+json")
	req.Header.Set("Expect", "100-continue")
	sw := &slowWrite{body: w, patch: patch, answer: make(chan error, 1)}
	go func() {
		resp, err := client.Do(req)
		if err == nil {
			msg, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("PATCH %s: %s: %s", name, resp.Status, bytes.TrimSpace(msg))
			}
		}
		sw.answer <- err
	}()
	select {
	case <-reading:
	case err := <-sw.answer:
		t.Fatalf("the PATCH ended before its body was sent: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the API server never began to read the PATCH's body")
	}
	return sw
}

// land sends the body and waits for the answer.
func (sw *slowWrite) land(t *testing.T) {
	t.Helper()
	if err := sw.send(); err != nil {
		t.Fatal(err)
	}
}

// send sends the body and waits for the answer; from any goroutine.
func (sw *slowWrite) send() error {
	if _, err := sw.body.Write(sw.patch); err != nil {
		return err
	}
	_ = sw.body.Close()
	select {
	case err := <-sw.answer:
		return err
	case <-time.After(30 * time.Second):
		return errors.New("the PATCH was not answered")
	}
}
