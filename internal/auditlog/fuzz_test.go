package auditlog

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"github.com/valyala/fastjson"
	"reflect"
	"strings"
	"testing"
)

// FuzzAuditLog: any input is read to an answer or a NotAuditLogError, never
// a panic; what is counted adds up; the same bytes gzip'd read the same.
func FuzzAuditLog(f *testing.F) {
	ev := line("ResponseComplete", "list", exporter, "exporter/v1.2", "example.com", "v1beta1", "widgets", t0)
	for _, seed := range []string{
		ev + "\n" + ev[:len(ev)/2],
		`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + ev + `]}`,
		`{"message":` + quote(ev) + "}\n",
		"{\n \"events\": [\n {\"message\": " + quote(ev) + "}\n ]\n}\n",
		`{"records":[{"properties":{"log":` + quote(ev) + `}}]}`,
		`[{"protoPayload":{"serviceName":"k8s.io","methodName":"io.k8s.x.get","resourceName":"apis/example.com/v1beta1/widgets/a/status"},"timestamp":"2026-11-28T10:00:00Z"}]`,
		"2026-11-28T10:00:00Z " + ev,
		"[\n" + ev + ",\n{\"@message\":" + quote(ev) + "}]",
		"{\n\"kind\":\"Event\",\"items\":{\"a\":[1]},\n\"events\":3}",
		"plain text\n\n",
	} {
		f.Add([]byte(seed))
	}
	f.Add([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","Stage":"x","stage":"ResponseComplete","user":{"username":"a","USERNAME":"b"},"objectRef":{"resource":"w","apiGroup":"g"},"objectRef":{"apiVersion":"v1"},"n":[1,-0.5e+3,true,null,{"a":"\u00e9\n"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// What fastEvent takes, encoding/json reads the same.
		var fast, slow event
		var p fastjson.Parser
		if fastEvent(&p, data, &fast) {
			if err := json.Unmarshal(data, &slow); err != nil {
				t.Fatalf("fastEvent took what encoding/json refuses: %v", err)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("fastEvent read %+v %+v, encoding/json %+v %+v", fast, fast.ObjectRef, slow, slow.ObjectRef)
			}
		}
		read := func(b []byte) (*Result, error) {
			return Read(t.Context(), []string{"-"}, Options{Stdin: bytes.NewReader(b), maxLine: 4 << 10})
		}
		res, err := read(data)
		var notLog *NotAuditLogError
		if err != nil {
			if !errors.As(err, &notLog) || notLog.Lines == 0 {
				t.Fatalf("err = %v", err)
			}
			return
		}
		got := res.Read
		if got.Requests > got.Events || got.Events < 0 || got.Bad < 0 || got.Skipped < 0 || got.Truncated > 1 {
			t.Fatalf("counts %+v", got)
		}
		var envelopes, requests int64
		for _, n := range got.Envelopes {
			envelopes += n
		}
		for gvr := range res.uses {
			clients, own := res.Clients(gvr)
			for _, c := range append(clients, own...) {
				requests += c.Requests
				if c.Last.Before(c.First) || len(c.Verbs) == 0 || c.Own != strings.HasPrefix(c.UserAgent, OwnUserAgent) {
					t.Fatalf("client %+v", c)
				}
			}
		}
		if envelopes != got.Events || requests != got.Requests || (got.Events > 0) != (got.From != nil) && got.From != nil {
			t.Fatalf("read %+v, %d requests in clients", got, requests)
		}
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(data)
		zw.Close()
		zres, err := read(z.Bytes())
		if err != nil {
			t.Fatalf("gzip'd: %v", err)
		}
		if zres.Read.Events != got.Events || zres.Read.Requests != got.Requests || zres.Read.Bad != got.Bad {
			t.Fatalf("gzip'd read %+v, plain %+v", zres.Read, got)
		}
	})
}
