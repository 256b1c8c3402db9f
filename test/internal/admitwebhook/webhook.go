// Package admitwebhook is a real HTTPS validating admission webhook for
// tests, served on 127.0.0.1 with its own CA (convwebhook's): it answers
// AdmissionReview v1 and denies the UPDATEs of the objects it is told to,
// each with the status it is given (any code, reason, details and
// message), so a test can show what a client makes of a denial that looks
// like a NotFound or a Conflict.
package admitwebhook

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/convwebhook"
)

// Path is where the webhook answers reviews.
const Path = "/validate"

// Webhook is a running validating admission webhook.
type Webhook struct {
	URL      string
	CABundle []byte
	// deny maps an object's name (in any namespace) to the status its
	// UPDATEs are denied with.
	deny     map[string]metav1.Status
	reviews  atomic.Int64
	mu       sync.Mutex
	denied   map[string]int
	server   *http.Server
	listener net.Listener
}

// Start serves the webhook on 127.0.0.1 over TLS with a fresh CA. Every
// UPDATE of an object whose name is a key of deny is answered allowed:
// false with that status; everything else is allowed.
func Start(deny map[string]metav1.Status) (*Webhook, error) {
	cert, ca, err := convwebhook.SelfSigned()
	if err != nil {
		return nil, err
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	w := &Webhook{URL: fmt.Sprintf("https://%s%s", l.Addr(), Path), CABundle: ca, deny: deny, denied: map[string]int{}, listener: l}
	mux := http.NewServeMux()
	mux.HandleFunc(Path, w.serve)
	w.server = &http.Server{Handler: mux}
	go func() { _ = w.server.Serve(l) }()
	return w, nil
}

// Stop stops serving.
func (w *Webhook) Stop() error { return w.server.Close() }

// Reviews counts the admission reviews answered so far.
func (w *Webhook) Reviews() int64 { return w.reviews.Load() }

// Denied counts the reviews denied so far for objects called name, dry
// runs included, in every namespace.
func (w *Webhook) Denied(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.denied[name]
}

// ClientConfig points an admission webhook configuration at this webhook.
func (w *Webhook) ClientConfig() admissionregistrationv1.WebhookClientConfig {
	url := w.URL
	return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: w.CABundle}
}

func (w *Webhook) serve(rw http.ResponseWriter, r *http.Request) {
	w.reviews.Add(1)
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, "bad review", http.StatusBadRequest)
		return
	}
	req := review.Request
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if s, ok := w.deny[req.Name]; ok && req.Operation == admissionv1.Update {
		resp.Allowed, resp.Result = false, &s
		w.mu.Lock()
		w.denied[req.Name]++
		w.mu.Unlock()
	}
	review.Response, review.Request = resp, nil
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(review)
}
