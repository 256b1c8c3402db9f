package auditlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// event holds what is read of an audit.k8s.io/v1 Event: the rest of it
// (request and response objects at level RequestResponse) is skipped.
type event struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent string     `json:"userAgent"`
	ObjectRef *objectRef `json:"objectRef"`
	// Strings, parsed when needed: a malformed time must not lose the line.
	RequestReceivedTimestamp string `json:"requestReceivedTimestamp"`
	StageTimestamp           string `json:"stageTimestamp"`
}

type objectRef struct {
	Resource    string `json:"resource"`
	APIGroup    string `json:"apiGroup"`
	APIVersion  string `json:"apiVersion"`
	Subresource string `json:"subresource"`
}

// isAudit: an audit Event, or an EventList's item (which may carry no
// kind): an audit ID and a stage say so.
func (e *event) isAudit() bool {
	if e.Kind == "" {
		return e.AuditID != "" && e.Stage != ""
	}
	return e.Kind == "Event" && strings.HasPrefix(e.APIVersion, "audit.k8s.io/")
}

// record is one JSON record of any envelope read: the event itself, or the
// managed clusters' wrappings of it. One decode tells them apart.
type record struct {
	event
	// An EventList, as the webhook backend sends them.
	Items []event `json:"items"`
	// EKS: a CloudWatch Logs event a line ("message"), a Logs Insights
	// export ("@message"), or `aws logs filter-log-events` ("events").
	Message   string `json:"message"`
	AtMessage string `json:"@message"`
	Events    []struct {
		Message   string `json:"message"`
		AtMessage string `json:"@message"`
	} `json:"events"`
	// AKS: diagnostic settings' kube-audit records, one or a "records" array.
	Properties aksProperties `json:"properties"`
	Records    []aksRecord   `json:"records"`
	// GKE: a Cloud Logging LogEntry whose protoPayload is an AuditLog.
	ProtoPayload *gkeAuditLog    `json:"protoPayload"`
	Timestamp    json.RawMessage `json:"timestamp"`
}

type aksProperties struct {
	Log string `json:"log"`
}

type aksRecord struct {
	Properties aksProperties `json:"properties"`
}

// record reads one JSON record and counts what it holds; false when it is
// no JSON at all (the caller counts the line bad or cut short).
func (r *reader) record(b []byte, depth int) bool {
	if b[0] != '{' {
		// CloudWatch's export to S3 puts the time before the message.
		if i := bytes.IndexByte(b, ' '); i > 0 && depth == 0 && isTime(b[:i]) {
			b = bytes.TrimSpace(b[i:])
		}
	}
	if b[0] == '[' && depth == 0 {
		// An export's array on one line.
		var elems []json.RawMessage
		if json.Unmarshal(b, &elems) != nil {
			return false
		}
		for _, e := range elems {
			if len(e) == 0 || !r.record(e, depth+1) {
				r.skip()
			}
		}
		return true
	}
	if bytes.HasPrefix(b, logBackendPrefix) {
		var e event
		if fastEvent(&r.parser, b, &e) && e.isAudit() {
			r.event(&e, "audit")
			return true
		}
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil && !isTypeError(err) {
		return false
	}
	switch {
	case rec.isAudit():
		r.event(&rec.event, "audit")
	case rec.Kind == "EventList" && strings.HasPrefix(rec.APIVersion, "audit.k8s.io/"):
		for i := range rec.Items {
			r.event(&rec.Items[i], "audit")
		}
	case rec.Message != "" || rec.AtMessage != "":
		r.wrapped(rec.Message+rec.AtMessage, "eks")
	case len(rec.Events) > 0:
		for _, e := range rec.Events {
			r.wrapped(e.Message+e.AtMessage, "eks")
		}
	case rec.Properties.Log != "":
		r.wrapped(rec.Properties.Log, "aks")
	case len(rec.Records) > 0:
		for _, a := range rec.Records {
			r.wrapped(a.Properties.Log, "aks")
		}
	case rec.ProtoPayload != nil && rec.ProtoPayload.isKubernetes():
		e := rec.ProtoPayload.event(rec.Timestamp)
		r.event(&e, "gke")
	default:
		r.skip()
	}
	return true
}

// isTypeError: the JSON is whole but a member is not of the type an
// envelope gives it (another program's "message" object): the rest stands.
func isTypeError(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te)
}

func isTime(b []byte) bool {
	_, err := time.Parse(time.RFC3339Nano, string(b))
	return err == nil
}

// wrapped reads an envelope's text: an Event's JSON, or another log line.
func (r *reader) wrapped(s, envelope string) {
	s = strings.TrimSpace(s)
	var e event
	if s == "" || s[0] != '{' {
		r.skip()
		return
	}
	if err := json.Unmarshal([]byte(s), &e); (err != nil && !isTypeError(err)) || !e.isAudit() {
		r.skip()
		return
	}
	r.event(&e, envelope)
}

func (r *reader) skip() { r.res.Read.Skipped++ }

// event counts an audit event: into the window always; as a request only at
// its last stage (ResponseComplete, or Panic), so that each counts once, and
// only for the resources asked about.
func (r *reader) event(e *event, envelope string) {
	r.cur.events++
	r.res.Read.Events++
	r.res.Read.Envelopes[envelope]++
	at, ok := parseTime(e.StageTimestamp)
	if !ok {
		at, ok = parseTime(e.RequestReceivedTimestamp)
	}
	if ok {
		r.seen(at)
	}
	ref := e.ObjectRef
	if (e.Stage != "ResponseComplete" && e.Stage != "Panic") || ref == nil || ref.APIGroup == "" || ref.Resource == "" {
		return
	}
	gr := schema.GroupResource{Group: ref.APIGroup, Resource: ref.Resource}
	if r.only != nil && !r.only[gr] {
		return
	}
	r.res.Read.Requests++
	gvr := gr.WithVersion(strings.TrimPrefix(ref.APIVersion, ref.APIGroup+"/"))
	clients := r.res.uses[gvr]
	if clients == nil {
		clients = map[clientKey]*tally{}
		r.res.uses[gvr] = clients
	}
	k := clientKey{user: e.User.Username, agent: e.UserAgent}
	t := clients[k]
	if t == nil {
		t = &tally{first: at, last: at}
		clients[k] = t
	}
	t.n++
	verb := e.Verb
	if ref.Subresource != "" {
		verb += "/" + ref.Subresource
	}
	if !containsString(t.verbs, verb) {
		t.verbs = append(t.verbs, verb)
	}
	if ok {
		if t.first.IsZero() || at.Before(t.first) {
			t.first = at
		}
		if at.After(t.last) {
			t.last = at
		}
	}
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func parseTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t.UTC(), err == nil
}
