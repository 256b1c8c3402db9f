package convwebhook

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Mode is how the webhook converts.
type Mode int32

const (
	// Correct converts both ways without loss.
	Correct Mode = iota
	// Lossy drops the port when converting v2 to v1.
	Lossy
	// Failing answers every review with a failure.
	Failing
	// DropsLegacy carries spec.legacy into no other version: an old version
	// whose objects have it loses it on old→new→old, while new→old→new
	// (objects read at new never have it) shows nothing.
	DropsLegacy
	// Pads makes an object larger at v1 than at any other version: it adds
	// spec.padding (PaddingBytes) on the way to v1 and drops it on the way
	// back.
	Pads
	// Renames answers with each object's name changed, which the API
	// server refuses.
	Renames
	// RefusesExtra will not express at any version but v1 an object that
	// carries spec.extra, a field only v1 has: it answers that object's
	// review with a failure, as real converters do for what an older
	// version has no form for.
	RefusesExtra
)

// PaddingBytes is what Pads adds at v1.
const PaddingBytes = 300 << 10

// Webhook is a running conversion webhook.
type Webhook struct {
	URL      string
	CABundle []byte
	mode     atomic.Int32
	reviews  atomic.Int64
	stall    atomic.Pointer[stall]
	server   *http.Server
	listener net.Listener
}

// Start serves the webhook on 127.0.0.1 over TLS with a fresh CA.
func Start(mode Mode) (*Webhook, error) {
	cert, ca, err := SelfSigned()
	if err != nil {
		return nil, err
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	w := &Webhook{URL: fmt.Sprintf("https://%s/convert", l.Addr()), CABundle: ca, listener: l}
	w.mode.Store(int32(mode))
	mux := http.NewServeMux()
	mux.HandleFunc("/convert", w.serve)
	w.server = &http.Server{Handler: mux}
	go func() { _ = w.server.Serve(l) }()
	return w, nil
}

// stall holds back the first review that converts a named object.
type stall struct {
	name    string
	for_    time.Duration
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

// Stall makes the next review that converts the object called name wait,
// as a slow webhook would, until release is called or at most d (keep d
// under the API server's 30 s timeout for a conversion webhook); started
// is closed when that review arrives.
func (w *Webhook) Stall(name string, d time.Duration) (started <-chan struct{}, release func()) {
	s := &stall{name: name, for_: d, started: make(chan struct{}), release: make(chan struct{})}
	w.stall.Store(s)
	var once sync.Once
	return s.started, func() { once.Do(func() { close(s.release) }) }
}

// holdBack waits if the review converts the stalled object.
func (w *Webhook) holdBack(objects []runtime.RawExtension) {
	s := w.stall.Load()
	if s == nil {
		return
	}
	for _, raw := range objects {
		u := &unstructured.Unstructured{}
		if u.UnmarshalJSON(raw.Raw) == nil && u.GetName() == s.name && w.stall.CompareAndSwap(s, nil) {
			s.once.Do(func() { close(s.started) })
			select {
			case <-s.release:
			case <-time.After(s.for_):
			}
			return
		}
	}
}

// SetMode switches how later reviews are answered.
func (w *Webhook) SetMode(m Mode) { w.mode.Store(int32(m)) }

// Reviews counts the conversion reviews answered so far.
func (w *Webhook) Reviews() int64 { return w.reviews.Load() }

// Stop stops serving.
func (w *Webhook) Stop() error { return w.server.Close() }

// Conversion is the CRD conversion settings that point at this webhook.
func (w *Webhook) Conversion() *apiextensionsv1.CustomResourceConversion {
	url := w.URL
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: w.CABundle},
			ConversionReviewVersions: []string{"v1"},
		},
	}
}

func (w *Webhook) serve(rw http.ResponseWriter, r *http.Request) {
	w.reviews.Add(1)
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, "bad review", http.StatusBadRequest)
		return
	}
	resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	w.holdBack(review.Request.Objects)
	mode := Mode(w.mode.Load())
	if mode == Failing {
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: "conversion webhook is failing on purpose"}
	} else {
		for _, raw := range review.Request.Objects {
			out, err := convert(raw.Raw, review.Request.DesiredAPIVersion, mode)
			if err != nil {
				resp.ConvertedObjects = nil
				resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
				break
			}
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
		}
	}
	review.Response, review.Request = resp, nil
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(review)
}

func convert(raw []byte, desired string, mode Mode) ([]byte, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	from := u.GetAPIVersion()
	if from == desired {
		return raw, nil
	}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	if spec == nil {
		spec = map[string]any{}
	}
	if _, extra := spec["extra"]; extra && mode == RefusesExtra && !strings.HasSuffix(desired, "/v1") {
		return nil, fmt.Errorf("%s/%s: spec.extra has no form at %s", u.GetNamespace(), u.GetName(), desired)
	}
	switch {
	case strings.HasSuffix(desired, "/v2"):
		if hp, ok := spec["hostPort"].(string); ok {
			host, port, _ := strings.Cut(hp, ":")
			spec["host"], spec["port"] = host, port
			delete(spec, "hostPort")
		}
	default: // every other version has the hostPort form
		host, _ := spec["host"].(string)
		port, _ := spec["port"].(string)
		if mode == Lossy {
			port = ""
		}
		if host != "" || port != "" {
			spec["hostPort"] = host + ":" + port
		}
		delete(spec, "host")
		delete(spec, "port")
	}
	switch {
	case mode == DropsLegacy:
		delete(spec, "legacy")
	case mode == Pads && strings.HasSuffix(desired, "/v1"):
		spec["padding"] = strings.Repeat("x", PaddingBytes)
	case mode == Pads:
		delete(spec, "padding")
	}
	u.Object["spec"] = spec
	u.SetAPIVersion(desired)
	if mode == Renames {
		u.SetName(u.GetName() + "-renamed")
	}
	return u.MarshalJSON()
}
