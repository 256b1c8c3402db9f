package auditlog

import (
	"encoding/json"
	"strings"
)

// gkeAuditLog is what is read of a GKE LogEntry's protoPayload (a
// google.cloud.audit.AuditLog): GKE logs one entry a request, no stages.
type gkeAuditLog struct {
	Type string `json:"@type"`
	// ServiceName is k8s.io for the Kubernetes API.
	ServiceName string `json:"serviceName"`
	// MethodName is io.k8s.GROUP.VERSION.RESOURCE.VERB: the verb is its last part.
	MethodName string `json:"methodName"`
	// ResourceName is apis/GROUP/VERSION/[namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]].
	ResourceName       string `json:"resourceName"`
	AuthenticationInfo struct {
		PrincipalEmail string `json:"principalEmail"`
	} `json:"authenticationInfo"`
	RequestMetadata struct {
		CallerSuppliedUserAgent string `json:"callerSuppliedUserAgent"`
	} `json:"requestMetadata"`
}

func (g *gkeAuditLog) isKubernetes() bool {
	return g.ServiceName == "k8s.io" && strings.HasPrefix(g.MethodName, "io.k8s.")
}

// event is the entry as an audit Event at its last stage.
func (g *gkeAuditLog) event(timestamp json.RawMessage) event {
	e := event{Kind: "Event", APIVersion: "audit.k8s.io/v1", Stage: "ResponseComplete",
		Verb: g.MethodName[strings.LastIndexByte(g.MethodName, '.')+1:], UserAgent: g.RequestMetadata.CallerSuppliedUserAgent}
	e.User.Username = g.AuthenticationInfo.PrincipalEmail
	var ts string
	if json.Unmarshal(timestamp, &ts) == nil {
		e.StageTimestamp = ts
	}
	e.ObjectRef = resourceRef(g.ResourceName)
	return e
}

// resourceRef reads a custom resource's path; nil for the core group and
// anything it cannot place.
func resourceRef(name string) *objectRef {
	parts := strings.Split(strings.TrimPrefix(name, "/"), "/")
	if len(parts) < 4 || parts[0] != "apis" {
		return nil
	}
	ref := &objectRef{APIGroup: parts[1], APIVersion: parts[2]}
	rest := parts[3:]
	if rest[0] == "namespaces" && len(rest) >= 3 {
		rest = rest[2:]
	}
	ref.Resource = rest[0]
	if len(rest) >= 3 {
		ref.Subresource = rest[2]
	}
	return ref
}
