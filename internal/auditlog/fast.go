package auditlog

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// logBackendPrefix starts every line kube-apiserver's log backend writes
// (TypeMeta is encoded first): only such lines try fastEvent.
var logBackendPrefix = []byte(`{"kind":"Event","apiVersion":"audit.k8s.io/`)

// fastEvent reads an event without reflection, several times faster than
// encoding/json: the members an event needs are taken, every other value
// is skipped but checked, so that a line it takes is JSON that
// encoding/json reads the same (FuzzAuditLog holds it to that). Anything
// unusual (an escape in a value it takes, a member named in another case,
// a value of another type) makes it give up: false, encoding/json decides.
func fastEvent(b []byte, e *event) bool {
	s := scanner{b: b}
	s.ws()
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "kind":
			return s.text(&e.Kind)
		case "apiVersion":
			return s.text(&e.APIVersion)
		case "auditID":
			return s.text(&e.AuditID)
		case "stage":
			return s.text(&e.Stage)
		case "verb":
			return s.text(&e.Verb)
		case "userAgent":
			return s.text(&e.UserAgent)
		case "requestReceivedTimestamp":
			return s.text(&e.RequestReceivedTimestamp)
		case "stageTimestamp":
			return s.text(&e.StageTimestamp)
		case "user":
			return s.peek('{') && s.object(func(key []byte) bool {
				if string(key) == "username" {
					return s.text(&e.User.Username)
				}
				return !foldsTo(key, "username") && s.skip()
			})
		case "objectRef":
			if !s.peek('{') {
				return false
			}
			if e.ObjectRef == nil {
				e.ObjectRef = &objectRef{}
			}
			ref := e.ObjectRef
			return s.object(func(key []byte) bool {
				switch string(key) {
				case "resource":
					return s.text(&ref.Resource)
				case "apiGroup":
					return s.text(&ref.APIGroup)
				case "apiVersion":
					return s.text(&ref.APIVersion)
				case "subresource":
					return s.text(&ref.Subresource)
				}
				return !foldsTo(key, "resource", "apigroup", "apiversion", "subresource") && s.skip()
			})
		}
		return !foldsTo(key, "kind", "apiversion", "auditid", "stage", "verb", "useragent", "requestreceivedtimestamp", "stagetimestamp", "user", "objectref") && s.skip()
	})
	s.ws()
	return ok && s.i == len(s.b)
}

// foldsTo: encoding/json would take key for one of names (it matches
// member names without regard to case).
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if strings.EqualFold(string(key), n) {
			return true
		}
	}
	return false
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scanner) peek(c byte) bool { return s.i < len(s.b) && s.b[s.i] == c }

// object reads {"key": value, ...}; member reads each value.
func (s *scanner) object(member func(key []byte) bool) bool {
	if !s.peek('{') {
		return false
	}
	s.i++
	s.ws()
	if s.peek('}') {
		s.i++
		return true
	}
	for {
		s.ws()
		key, plain, ok := s.str()
		if !ok || !plain {
			return false
		}
		s.ws()
		if !s.peek(':') {
			return false
		}
		s.i++
		s.ws()
		if !member(key) {
			return false
		}
		s.ws()
		switch {
		case s.peek(','):
			s.i++
		case s.peek('}'):
			s.i++
			return true
		default:
			return false
		}
	}
}

// text reads a string without escapes, in valid UTF-8, into *dst.
func (s *scanner) text(dst *string) bool {
	raw, plain, ok := s.str()
	if !ok || !plain || !utf8.Valid(raw) {
		return false
	}
	*dst = string(raw)
	return true
}

// str reads a string: its raw bytes, and plain when it has no escape.
func (s *scanner) str() (raw []byte, plain, ok bool) {
	if !s.peek('"') {
		return nil, false, false
	}
	start := s.i + 1
	end := bytes.IndexByte(s.b[start:], '"')
	if end < 0 {
		return nil, false, false
	}
	if bytes.IndexByte(s.b[start:start+end], '\\') < 0 {
		for _, c := range s.b[start : start+end] {
			if c < 0x20 {
				return nil, false, false
			}
		}
		s.i = start + end + 1
		return s.b[start : start+end], true, true
	}
	for i := start; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			return s.b[start:i], false, true
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			if i+1 >= len(s.b) {
				return nil, false, false
			}
			switch s.b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+5 >= len(s.b) || !isHex(s.b[i+2:i+6]) {
					return nil, false, false
				}
				i += 5
			default:
				return nil, false, false
			}
		}
	}
	return nil, false, false
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// skip reads any value, checking it is JSON; nesting beyond a depth any
// audit event has gives up.
func (s *scanner) skip() bool { return s.skipAt(0) }

func (s *scanner) skipAt(depth int) bool {
	if depth > 64 || s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == '{':
		return s.object(func([]byte) bool { return s.skipAt(depth + 1) })
	case c == '[':
		s.i++
		s.ws()
		if s.peek(']') {
			s.i++
			return true
		}
		for {
			s.ws()
			if !s.skipAt(depth + 1) {
				return false
			}
			s.ws()
			switch {
			case s.peek(','):
				s.i++
			case s.peek(']'):
				s.i++
				return true
			default:
				return false
			}
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.number()
	}
}

func (s *scanner) literal(word string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return false
	}
	s.i += len(word)
	return true
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	if s.peek('-') {
		s.i++
	}
	switch {
	case s.peek('0'):
		s.i++
	case s.i < len(s.b) && '1' <= s.b[s.i] && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.peek('.') {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if s.peek('e') || s.peek('E') {
		s.i++
		if s.peek('+') || s.peek('-') {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}
