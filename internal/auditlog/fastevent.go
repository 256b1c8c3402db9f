package auditlog

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// logBackendPrefix starts every line kube-apiserver's log backend writes (TypeMeta first):
// such lines are read by fastEvent (json.Valid, then fastjson), several times faster than
// encoding/json's decoder here, which FuzzAuditLog holds it to.
var logBackendPrefix = []byte(`{"kind":"Event","apiVersion":"audit.k8s.io/`)

// eventKeys are the members fastEvent reads, at the top and in user and objectRef.
var eventKeys = map[string][]string{
	"":          {"kind", "apiVersion", "auditID", "stage", "verb", "userAgent", "requestReceivedTimestamp", "stageTimestamp", "user", "objectRef"},
	"user":      {"username"},
	"objectRef": {"resource", "apiGroup", "apiVersion", "subresource"},
}

// fastEvent reads an event with p; false where the line is no valid JSON or holds anything
// encoding/json would read otherwise (a member repeated or named in another case, a value of
// another type): encoding/json decides those.
func fastEvent(p *fastjson.Parser, b []byte, e *event) bool {
	// fastjson leaves strings it is not asked for unchecked (escapes): the standard library
	// checks the line first, without building anything.
	if !json.Valid(b) {
		return false
	}
	v, err := p.ParseBytes(b)
	if err != nil {
		return false
	}
	top, err := v.Object()
	if err != nil || !plain(top, "") {
		return false
	}
	if !text(top.Get("kind"), &e.Kind) || !text(top.Get("apiVersion"), &e.APIVersion) || !text(top.Get("auditID"), &e.AuditID) ||
		!text(top.Get("stage"), &e.Stage) || !text(top.Get("verb"), &e.Verb) || !text(top.Get("userAgent"), &e.UserAgent) ||
		!text(top.Get("requestReceivedTimestamp"), &e.RequestReceivedTimestamp) || !text(top.Get("stageTimestamp"), &e.StageTimestamp) {
		return false
	}
	if u := top.Get("user"); u != nil && u.Type() != fastjson.TypeNull {
		o, err := u.Object()
		if err != nil || !plain(o, "user") || !text(o.Get("username"), &e.User.Username) {
			return false
		}
	}
	if r := top.Get("objectRef"); r != nil && r.Type() != fastjson.TypeNull {
		o, err := r.Object()
		if err != nil || !plain(o, "objectRef") {
			return false
		}
		e.ObjectRef = &objectRef{}
		ref := e.ObjectRef
		if !text(o.Get("resource"), &ref.Resource) || !text(o.Get("apiGroup"), &ref.APIGroup) ||
			!text(o.Get("apiVersion"), &ref.APIVersion) || !text(o.Get("subresource"), &ref.Subresource) {
			return false
		}
	}
	return true
}

// plain: no member of o that fastEvent reads is repeated, and none differs from one only in case
// (encoding/json matches names without regard to case, and takes the last of a repeated one).
func plain(o *fastjson.Object, at string) bool {
	var seen uint16
	ok := true
	wanted := eventKeys[at]
	o.Visit(func(k []byte, _ *fastjson.Value) {
		for i, want := range wanted {
			if len(k) == len(want) && strings.EqualFold(string(k), want) {
				if string(k) != want || seen&(1<<i) != 0 {
					ok = false
				}
				seen |= 1 << i
			}
		}
	})
	return ok
}

// text sets to from v, a string or null (encoding/json leaves a field alone for null); false for
// what encoding/json would read otherwise.
func text(v *fastjson.Value, to *string) bool {
	switch {
	case v == nil || v.Type() == fastjson.TypeNull:
		return true
	case v.Type() != fastjson.TypeString:
		return false
	}
	b := v.GetStringBytes()
	if !utf8.Valid(b) {
		return false // encoding/json puts U+FFFD for each bad byte
	}
	*to = string(b)
	return true
}
