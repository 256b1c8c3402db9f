package usage

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// The API server sets deprecatedMetric the first time it serves a deprecated version and never
// resets it while it lives (startMetric dates that); requestsMetric counts every request per
// group, version and resource: how many, not just "once, by someone" (see OwnRequests).
const (
	deprecatedMetric = "apiserver_requested_deprecated_apis"
	startMetric      = "process_start_time_seconds"
	requestsMetric   = "apiserver_request_total"
)

// MetricsAccess says whether the API server's /metrics could be read.
type MetricsAccess string

const (
	MetricsRead MetricsAccess = "read"
	// MetricsNotAllowed: the user lacks get on the nonResourceURL /metrics.
	MetricsNotAllowed MetricsAccess = "notAllowed"
	// MetricsNotServed: the server has no /metrics (404), as on some managed control planes.
	MetricsNotServed MetricsAccess = "notServed"
)

// DeprecatedSeries is one series of the metric: this resource was requested while deprecated.
type DeprecatedSeries struct {
	Group          string
	Version        string
	Resource       string
	Subresource    string
	RemovedRelease string
}

// DeprecatedAPIs is one API server's /metrics on deprecated requests: its own, since it started.
type DeprecatedAPIs struct {
	Access MetricsAccess
	// StartedAt is when the answering server started; zero when /metrics does not say.
	StartedAt time.Time
	Series    []DeprecatedSeries
	// Requests sums apiserver_request_total per resource version since start, deprecated or not.
	Requests map[schema.GroupVersionResource]float64
}

// VersionRequests is what the metric says about one version of a CRD.
type VersionRequests struct {
	// Subresources requested: "" for the resource itself, else status, scale.
	Subresources   []string
	RemovedRelease string
}

// DeprecatedRequests reads the metric from the API server's /metrics. A 403 or 404 is an
// answer, not an error: the rest of a report still stands.
func DeprecatedRequests(ctx context.Context, client rest.Interface) (*DeprecatedAPIs, error) {
	body, err := client.Get().AbsPath("/metrics").
		// The text format: every API server version serves it.
		SetHeader("Accept", "text/plain;version=0.0.4").
		Stream(ctx)
	switch {
	case apierrors.IsForbidden(err):
		return &DeprecatedAPIs{Access: MetricsNotAllowed}, nil
	case apierrors.IsNotFound(err):
		return &DeprecatedAPIs{Access: MetricsNotServed}, nil
	case err != nil:
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	defer body.Close()
	d, err := ParseDeprecatedAPIs(body)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	return d, nil
}

// ParseDeprecatedAPIs reads the metrics and start time from a Prometheus text page.
func ParseDeprecatedAPIs(r io.Reader) (*DeprecatedAPIs, error) {
	wanted, err := keepFamilies(r, deprecatedMetric, startMetric, requestsMetric)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(wanted))
	if err != nil {
		return nil, err
	}
	d := &DeprecatedAPIs{Access: MetricsRead, Requests: map[schema.GroupVersionResource]float64{}}
	if f := families[startMetric]; f != nil && len(f.GetMetric()) > 0 {
		if s := sampleValue(f.GetMetric()[0]); s > 0 {
			sec, frac := math.Modf(s)
			d.StartedAt = time.Unix(int64(sec), int64(frac*1e9)).UTC()
		}
	}
	for _, m := range families[deprecatedMetric].GetMetric() {
		if sampleValue(m) == 0 {
			continue
		}
		var s DeprecatedSeries
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "group":
				s.Group = l.GetValue()
			case "version":
				s.Version = l.GetValue()
			case "resource":
				s.Resource = l.GetValue()
			case "subresource":
				s.Subresource = l.GetValue()
			case "removed_release":
				s.RemovedRelease = l.GetValue()
			}
		}
		d.Series = append(d.Series, s)
	}
	for _, m := range families[requestsMetric].GetMetric() {
		var gvr schema.GroupVersionResource
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "group":
				gvr.Group = l.GetValue()
			case "version":
				gvr.Version = l.GetValue()
			case "resource":
				gvr.Resource = l.GetValue()
			}
		}
		if gvr.Resource != "" {
			d.Requests[gvr] += m.GetCounter().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return d, nil
}

// RequestedWhileDeprecated reports whether the metric names gvr (any subresource).
func (d *DeprecatedAPIs) RequestedWhileDeprecated(gvr schema.GroupVersionResource) bool {
	for _, s := range d.Series {
		if s.Group == gvr.Group && s.Version == gvr.Version && s.Resource == gvr.Resource {
			return true
		}
	}
	return false
}

// sampleValue reads a gauge, or an untyped sample where a server leaves out the TYPE line.
func sampleValue(m *dto.Metric) float64 {
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetUntyped().GetValue()
}

// keepFamilies keeps the named families' lines: a /metrics page is megabytes, and one line
// elsewhere the parser refuses (a new format feature, a duplicate TYPE) must not hide these.
func keepFamilies(r io.Reader, names ...string) ([]byte, error) {
	var out bytes.Buffer
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && ofFamily(line, names) {
			out.Write(line)
			if line[len(line)-1] != '\n' {
				out.WriteByte('\n')
			}
		}
		if errors.Is(err, io.EOF) {
			return out.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func ofFamily(line []byte, names []string) bool {
	s := string(line)
	for _, prefix := range []string{"# HELP ", "# TYPE "} {
		if rest, ok := strings.CutPrefix(s, prefix); ok {
			s = rest
			break
		}
	}
	for _, n := range names {
		if rest, ok := strings.CutPrefix(s, n); ok && (rest == "" || strings.ContainsAny(rest[:1], " {\t\n")) {
			return true
		}
	}
	return false
}

// ForCRD says what was requested per version a series names; an absent one was not
// requested while deprecated, or never deprecated.
func (d *DeprecatedAPIs) ForCRD(crd *apiextensionsv1.CustomResourceDefinition) map[string]VersionRequests {
	out := map[string]VersionRequests{}
	for _, s := range d.Series {
		if s.Group != crd.Spec.Group || s.Resource != crd.Spec.Names.Plural {
			continue
		}
		v := out[s.Version]
		if !slices.Contains(v.Subresources, s.Subresource) {
			v.Subresources = append(v.Subresources, s.Subresource)
			slices.Sort(v.Subresources)
		}
		if s.RemovedRelease != "" {
			v.RemovedRelease = s.RemovedRelease
		}
		out[s.Version] = v
	}
	return out
}

// Unreadable says why the metric could not be read; "" when it was.
func (d *DeprecatedAPIs) Unreadable() string {
	switch d.Access {
	case MetricsNotAllowed:
		return "not allowed to read /metrics (needs get on nonResourceURL /metrics)"
	case MetricsNotServed:
		return "the API server that answered serves no /metrics"
	}
	return ""
}
