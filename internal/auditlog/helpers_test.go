package auditlog

import (
	"encoding/json"
	"fmt"
	"time"
)

// line is one event as kube-apiserver's log backend writes it, at level
// Metadata, with the members the reader skips.
func line(stage, verb, user, agent, group, version, resource string, at time.Time) string {
	e := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
		"auditID": fmt.Sprintf("id-%d", at.UnixNano()), "stage": stage,
		"requestURI": fmt.Sprintf("/apis/%s/%s/namespaces/default/%s/w-1", group, version, resource),
		"verb":       verb,
		"user": map[string]any{"username": user, "uid": "u-1",
			"groups": []string{"system:serviceaccounts", "system:authenticated"},
			"extra":  map[string]any{"authentication.kubernetes.io/pod-name": []string{"pod-1"}}},
		"sourceIPs": []string{"10.0.0.12"}, "userAgent": agent,
		"objectRef":                map[string]any{"resource": resource, "namespace": "default", "name": "w-1", "apiGroup": group, "apiVersion": version},
		"responseStatus":           map[string]any{"metadata": map[string]any{}, "code": 200},
		"requestReceivedTimestamp": at.Add(-2 * time.Millisecond).Format("2006-01-02T15:04:05.000000Z07:00"),
		"stageTimestamp":           at.Format("2006-01-02T15:04:05.000000Z07:00"),
		"annotations":              map[string]any{"authorization.k8s.io/decision": "allow", "k8s.io/deprecated": "true"},
	}
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

var t0 = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
