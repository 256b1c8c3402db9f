package schemacompat

import (
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestMinimalObject(t *testing.T) {
	var schema apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(`{"type":"object","required":["spec"],"properties":{
		"spec":{"type":"object","required":["size","mode","when","ports","name","ratio","on"],"properties":{
			"size":{"type":"integer","minimum":3,"exclusiveMinimum":true},
			"mode":{"type":"string","enum":["Fast","Slow"]},
			"when":{"type":"string","format":"date-time"},
			"ports":{"type":"array","minItems":2,"items":{"type":"object","required":["port"],"properties":{"port":{"type":"integer","default":80}}}},
			"name":{"type":"string","minLength":3},
			"ratio":{"type":"number","maximum":-2},
			"on":{"type":"boolean"},
			"optional":{"type":"string"}}}}}`), &schema); err != nil {
		t.Fatal(err)
	}
	c := widgets([]string{"v1"}, &schema)
	got, _ := json.Marshal(MinimalObject(c, "v1", "probe", "default"))
	want := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"probe","namespace":"default"},"spec":{"mode":"Fast","name":"aaa","on":false,"ports":[{"port":80},{"port":80}],"ratio":-3,"size":4,"when":"1970-01-01T00:00:00Z"}}`
	if string(got) != want {
		t.Errorf("got\n %s\nwant\n %s", got, want)
	}
}
