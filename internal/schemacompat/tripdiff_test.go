package schemacompat

import (
	"encoding/json"
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// A change is a loss only where a value is lost: a default a schema on the
// way gives a field the object lacked is added, not lost, in either
// direction; an empty value dropped is not lost only where absence reads
// the same (docs/safety.md).
func TestRoundTripDiffTellsLossesFromDefaults(t *testing.T) {
	parse := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	schema := func(s string) *apiextensionsv1.JSONSchemaProps {
		if s == "" {
			return nil
		}
		var p apiextensionsv1.JSONSchemaProps
		if err := json.Unmarshal([]byte(s), &p); err != nil {
			t.Fatal(err)
		}
		return &p
	}
	// Longhorn's BackingImage: v1beta1 keeps spec unchecked, v1beta2 defaults dataEngine.
	const (
		v1beta1 = `{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`
		v1beta2 = `{"type":"object","properties":{"spec":{"type":"object","properties":{"dataEngine":{"type":"string","default":"v1"},"engineImage":{"type":"string"}}}}}`
		// A default object whose own field has a default: the server fills both.
		nested    = `{"type":"object","properties":{"spec":{"type":"object","properties":{"tuning":{"type":"object","default":{},"properties":{"level":{"type":"integer","default":3}}}}}}}`
		keyed     = `{"type":"object","properties":{"spec":{"type":"object","properties":{"ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","properties":{"name":{"type":"string"},"protocol":{"type":"string","default":"TCP"}}}}}}}}`
		plain     = `{"type":"object","properties":{"spec":{"type":"object","properties":{"image":{"type":"string"},"args":{"type":"array","items":{"type":"string"}},"labels":{"type":"object","additionalProperties":{"type":"string"}}}}}}`
		defaulted = `{"type":"object","properties":{"spec":{"type":"object","properties":{"image":{"type":"string","default":"nginx"}}}}}`
		required  = `{"type":"object","properties":{"spec":{"type":"object","required":["image"],"properties":{"image":{"type":"string"}}}}}`
		nullable  = `{"type":"object","properties":{"spec":{"type":"object","properties":{"image":{"type":"string","nullable":true}}}}}`
	)
	for _, tc := range []struct {
		name, read, back   string
		at, along          string
		lost, added, empty string
	}{
		{name: "longhorn: a default the storage version adds, on the way there",
			read: `{"spec":{"sourceType":"download"}}`, back: `{"spec":{"sourceType":"download","dataEngine":"v1"}}`, at: v1beta1, along: v1beta2,
			added: `[{spec.dataEngine <absent> "v1"}]`},
		{name: "the same default, on the way back (the version read defaults it)",
			read: `{"spec":{}}`, back: `{"spec":{"dataEngine":"v1"}}`, at: v1beta2, along: v1beta1,
			added: `[{spec.dataEngine <absent> "v1"}]`},
		{name: "another value than the default is not a default",
			read: `{"spec":{}}`, back: `{"spec":{"dataEngine":"v2"}}`, at: v1beta1, along: v1beta2,
			lost: `[{spec.dataEngine <absent> "v2"}]`},
		{name: "a value read that comes back as the default is lost",
			read: `{"spec":{"dataEngine":"v2"}}`, back: `{"spec":{"dataEngine":"v1"}}`, at: v1beta1, along: v1beta2,
			lost: `[{spec.dataEngine "v2" "v1"}]`},
		{name: "a field removed is lost",
			read: `{"spec":{"legacy":"keep","dataEngine":"v1"}}`, back: `{"spec":{"dataEngine":"v1"}}`, at: v1beta1, along: v1beta2,
			lost: `[{spec.legacy "keep" <absent>}]`},
		{name: "a default no schema on the way gives is not a default",
			read: `{"spec":{}}`, back: `{"spec":{"dataEngine":"v1"}}`, at: v1beta1, along: v1beta1,
			lost: `[{spec.dataEngine <absent> "v1"}]`},
		{name: "a default object is filled with its own fields' defaults",
			read: `{"spec":{}}`, back: `{"spec":{"tuning":{"level":3}}}`, at: plain, along: nested,
			added: `[{spec.tuning <absent> {"level":3}}]`},
		{name: "a default inside a keyed list's element",
			read: `{"spec":{"ports":[{"name":"b"},{"name":"a","protocol":"UDP"}]}}`, back: `{"spec":{"ports":[{"name":"a","protocol":"UDP"},{"name":"b","protocol":"TCP"}]}}`, at: keyed, along: keyed,
			added: `[{spec.ports[name=b].protocol <absent> "TCP"}]`},
		{name: "an empty string dropped where absence reads the same",
			read: `{"spec":{"image":"","args":[],"labels":{}}}`, back: `{"spec":{}}`, at: plain, along: plain,
			empty: `[{spec.args [] <absent>} {spec.image "" <absent>} {spec.labels {} <absent>}]`},
		{name: "an empty string dropped where a default would read instead is lost",
			read: `{"spec":{"image":""}}`, back: `{"spec":{}}`, at: defaulted, along: plain,
			lost: `[{spec.image "" <absent>}]`},
		{name: "an empty string dropped that the version read requires is lost",
			read: `{"spec":{"image":""}}`, back: `{"spec":{}}`, at: required, along: plain,
			lost: `[{spec.image "" <absent>}]`},
		{name: "an empty string dropped where the version read makes it nullable is lost",
			read: `{"spec":{"image":""}}`, back: `{"spec":{}}`, at: nullable, along: plain,
			lost: `[{spec.image "" <absent>}]`},
		{name: "an empty value dropped where no schema says anything (kept unchecked)",
			read: `{"spec":{"engineImage":""}}`, back: `{"spec":{}}`, at: v1beta1, along: "",
			empty: `[{spec.engineImage "" <absent>}]`},
		{name: "a non-empty value dropped is lost",
			read: `{"spec":{"image":"x"}}`, back: `{"spec":{}}`, at: plain, along: plain,
			lost: `[{spec.image "x" <absent>}]`},
	} {
		d := RoundTripDiff(parse(tc.read), parse(tc.back), schema(tc.at), schema(tc.along))
		for _, c := range []struct {
			what, want string
			got        any
		}{{"lost", tc.lost, d.Lost}, {"defaulted", tc.added, d.Defaulted}, {"empty dropped", tc.empty, d.EmptyDropped}} {
			want := c.want
			if want == "" {
				want = "[]"
			}
			if got := fmt.Sprint(c.got); got != want {
				t.Errorf("%s: %s %s, want %s", tc.name, c.what, got, want)
			}
		}
	}
}
