package convert

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	kjson "sigs.k8s.io/json"
)

// Webhook sends ConversionReviews to a CRD's own converter the way the API
// server does: to clientConfig.url, trusting its caBundle, or to a Service
// through the API server's service proxy.
type Webhook struct {
	// Services is the core API's REST client, which reaches a Service
	// through the API server; nil where there is no cluster.
	Services rest.Interface
	// Timeout bounds one review; 0 means 30 s, the API server's bound.
	Timeout time.Duration
}

// reviewVersions are the ConversionReview versions this client speaks, in
// the order it prefers them.
var reviewVersions = []string{"v1", "v1beta1"}

// Review asks crd's converter for objs at desired (group/version), and
// returns its answer checked as the API server checks it: the review's uid,
// one object for each sent, each at desired with its kind, name, namespace
// and uid unchanged. A converter that cannot be reached or answers with a
// failure is an error; an answer the API server would refuse is an
// *AnswerError naming the object.
func (w Webhook) Review(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, desired string, objs []map[string]any) ([]map[string]any, error) {
	conv := crd.Spec.Conversion
	if conv == nil || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
		return nil, fmt.Errorf("%s has no conversion webhook", crd.Name)
	}
	// The first of the converter's versions this client speaks, as the
	// API server picks.
	i := slices.IndexFunc(conv.Webhook.ConversionReviewVersions, func(v string) bool { return slices.Contains(reviewVersions, v) })
	if i < 0 {
		return nil, fmt.Errorf("%s's converter speaks ConversionReview %v; this client speaks %v", crd.Name, conv.Webhook.ConversionReviewVersions, reviewVersions)
	}
	version := conv.Webhook.ConversionReviewVersions[i]
	uid := string(uuid.NewUUID())
	body, err := json.Marshal(map[string]any{
		"apiVersion": "apiextensions.k8s.io/" + version,
		"kind":       "ConversionReview",
		"request":    map[string]any{"uid": uid, "desiredAPIVersion": desired, "objects": objs},
	})
	if err != nil {
		return nil, err
	}
	timeout := w.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := w.post(ctx, crd, conv.Webhook.ClientConfig, body)
	if err != nil {
		return nil, fmt.Errorf("%s's converter: %w", crd.Name, err)
	}
	var review struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Response   *struct {
			UID              string           `json:"uid"`
			ConvertedObjects []map[string]any `json:"convertedObjects"`
			Result           struct {
				Status  string `json:"status"`
				Message string `json:"message"`
			} `json:"result"`
		} `json:"response"`
	}
	// Integers as int64, exactly, as the API server reads the answer.
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &review); err != nil {
		return nil, &AnswerError{CRD: crd.Name, Reason: "the answer is not a ConversionReview: " + err.Error()}
	}
	r := review.Response
	switch {
	case review.Kind != "ConversionReview" || r == nil:
		return nil, &AnswerError{CRD: crd.Name, Reason: "the answer is not a ConversionReview with a response"}
	case version == "v1" && review.APIVersion != "apiextensions.k8s.io/v1":
		return nil, &AnswerError{CRD: crd.Name, Reason: fmt.Sprintf("expected an apiextensions.k8s.io/v1 ConversionReview, got %s", review.APIVersion)}
	case version == "v1" && r.UID != uid:
		return nil, &AnswerError{CRD: crd.Name, Reason: fmt.Sprintf("expected response.uid=%q, got %q", uid, r.UID)}
	case r.Result.Status != "Success":
		return nil, &FailedError{CRD: crd.Name, Message: r.Result.Message}
	case len(r.ConvertedObjects) != len(objs):
		return nil, &AnswerError{CRD: crd.Name, Reason: fmt.Sprintf("returned %d objects for %d sent", len(r.ConvertedObjects), len(objs))}
	}
	for i, out := range r.ConvertedObjects {
		if err := checkAnswer(objs[i], out, desired); err != nil {
			return nil, &AnswerError{CRD: crd.Name, Object: objectName(objs[i]), Reason: err.Error()}
		}
	}
	return r.ConvertedObjects, nil
}

// FailedError is a converter's answer that it failed (result.status
// Failure), with its message.
type FailedError struct {
	CRD     string
	Message string
	// Where and Object name the object it failed on, when known.
	Where, Object string
}

func (e *FailedError) Error() string {
	if e.Where == "" {
		return fmt.Sprintf("%s's converter failed: %s", e.CRD, e.Message)
	}
	return fmt.Sprintf("%s: %s: %s's converter failed: %s", e.Where, e.Object, e.CRD, e.Message)
}

// post sends the review where the client config points.
func (w Webhook) post(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, cc *apiextensionsv1.WebhookClientConfig, body []byte) ([]byte, error) {
	if cc.URL != nil {
		return postURL(ctx, *cc.URL, cc.CABundle, body)
	}
	svc := cc.Service
	if svc == nil {
		return nil, errors.New("the client config names neither a url nor a service")
	}
	if w.Services == nil {
		return nil, fmt.Errorf("the converter is the Service %s/%s, reached through the API server: there is no cluster to reach it through", svc.Namespace, svc.Name)
	}
	port := int32(443)
	if svc.Port != nil {
		port = *svc.Port
	}
	path := "/"
	if svc.Path != nil {
		path = *svc.Path
	}
	// The API server's service proxy: it dials the Service as the API
	// server would, from inside the cluster.
	return w.Services.Post().
		AbsPath("/api/v1/namespaces", svc.Namespace, "services", "https:"+svc.Name+":"+strconv.Itoa(int(port)), "proxy", path).
		SetHeader("Content-Type", "application/json").
		Body(body).
		Do(ctx).Raw()
}

// postURL sends the review to url, trusting caBundle (the system's roots
// when it is empty), as the API server does.
func postURL(ctx context.Context, url string, caBundle, body []byte) ([]byte, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("caBundle holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	switch {
	case err != nil:
		return nil, err
	case len(raw) > maxAnswer:
		return nil, fmt.Errorf("the answer is over %d MiB", maxAnswer>>20)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s answered %s: %s", url, resp.Status, bytes.TrimSpace(raw[:min(len(raw), 512)]))
	}
	return raw, nil
}

// maxAnswer bounds a converter's answer to one review.
const maxAnswer = 64 << 20
