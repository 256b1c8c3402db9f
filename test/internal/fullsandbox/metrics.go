package fullsandbox

import (
	"context"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// MetricSum adds up the API server's own samples (its /metrics) of a
// metric whose labels include every one of labels.
func (c *Cluster) MetricSum(ctx context.Context, name string, labels ...string) (float64, error) {
	cfg, err := c.RestConfig()
	if err != nil {
		return 0, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	body, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	var sum float64
	for line := range strings.Lines(string(body)) {
		if !strings.HasPrefix(line, name+"{") || !hasAll(line, labels) {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			sum += v
		}
	}
	return sum, nil
}

func hasAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
