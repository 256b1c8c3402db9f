package manifest

import (
	"strings"
	"testing"
)

func TestRewriteEditsOnlyWhatDiffers(t *testing.T) {
	cases := []struct {
		name string
		in   string
		edit func(obj map[string]any)
		want string
	}{{
		name: "apiVersion in place, comments and quoting kept",
		in: `# a widget
apiVersion: "example.com/v1beta1" # pinned
kind: Widget
metadata:
  name: a   # the first
spec:
  size: 3
`,
		edit: func(obj map[string]any) { obj["apiVersion"] = "example.com/v1" },
		want: `# a widget
apiVersion: "example.com/v1" # pinned
kind: Widget
metadata:
  name: a   # the first
spec:
  size: 3
`,
	}, {
		name: "a key removed with its lines, nested",
		in: `apiVersion: example.com/v1beta1
kind: Widget
spec:
  size: 3
  legacy:
    a: 1
    b: 2
  color: red
`,
		edit: func(obj map[string]any) { delete(obj["spec"].(map[string]any), "legacy") },
		want: `apiVersion: example.com/v1beta1
kind: Widget
spec:
  size: 3
  color: red
`,
	}, {
		name: "a key added after the mapping's last line",
		in: `kind: Widget
spec:
  host: a
  # trailing comment of spec
other: 1
`,
		edit: func(obj map[string]any) { obj["spec"].(map[string]any)["port"] = "80" },
		want: `kind: Widget
spec:
  host: a
  port: "80"
  # trailing comment of spec
other: 1
`,
	}, {
		name: "a value that changes shape is written again in block style",
		in: `spec:
  hostPort: a:80
  keep: true
`,
		edit: func(obj map[string]any) {
			obj["spec"].(map[string]any)["hostPort"] = map[string]any{"host": "a", "port": int64(80)}
		},
		want: `spec:
  hostPort:
    host: a
    port: 80
  keep: true
`,
	}, {
		name: "the first key of a list item",
		in: `spec:
  items:
  - drop: x
    keep: yes1
  - drop: z
    keep: w
`,
		edit: func(obj map[string]any) {
			for _, it := range obj["spec"].(map[string]any)["items"].([]any) {
				delete(it.(map[string]any), "drop")
			}
		},
		want: `spec:
  items:
  - keep: yes1
  - keep: w
`,
	}, {
		name: "a byte-order mark kept, apiVersion on line 1 edited",
		in:   "\ufeffapiVersion: example.com/v1beta1 # pinned\nkind: Widget\nspec:\n  size: 3\n",
		edit: func(obj map[string]any) { obj["apiVersion"] = "example.com/v1" },
		want: "\ufeffapiVersion: example.com/v1 # pinned\nkind: Widget\nspec:\n  size: 3\n",
	}, {
		name: "a byte-order mark, a key dropped and one added",
		in:   "\ufeffapiVersion: example.com/v1beta1\nkind: Widget\nspec:\n  size: 3\n  legacy: x\n",
		edit: func(obj map[string]any) {
			obj["spec"] = map[string]any{"size": int64(3), "color": "red"}
		},
		want: "\ufeffapiVersion: example.com/v1beta1\nkind: Widget\nspec:\n  size: 3\n  color: red\n",
	}, {
		name: "a mapping emptied is written {}, as the API server keeps it",
		in: `apiVersion: example.com/v1beta1
kind: Widget
spec:
  # the old way
  legacy: x
status: {}
`,
		edit: func(obj map[string]any) { obj["spec"] = map[string]any{} },
		want: `apiVersion: example.com/v1beta1
kind: Widget
spec: {}
status: {}
`,
	}, {
		name: "a mapping in a list item emptied",
		in: `kind: Widget
spec:
  parts:
  - legacy: x
  - name: b
`,
		edit: func(obj map[string]any) {
			obj["spec"] = map[string]any{"parts": []any{map[string]any{}, map[string]any{"name": "b"}}}
		},
		want: `kind: Widget
spec:
  parts:
  - {}
  - name: b
`,
	}, {
		name: "CRLF kept",
		in:   "kind: Widget\r\nspec:\r\n  a: 1\r\n",
		edit: func(obj map[string]any) { obj["spec"].(map[string]any)["b"] = int64(2) },
		want: "kind: Widget\r\nspec:\r\n  a: 1\r\n  b: 2\r\n",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &File{Path: "x.yaml"}
			if err := f.parse([]byte(tc.in)); err != nil {
				t.Fatal(err)
			}
			objs, err := f.Objects()
			if err != nil || len(objs) != 1 {
				t.Fatalf("objects: %v %v", objs, err)
			}
			obj := objs[0]
			want := obj.Obj
			tc.edit(want)
			if err := obj.Rewrite(want); err != nil {
				t.Fatal(err)
			}
			if got := string(f.Bytes()); got != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestRewriteRefusesWhatItCannotEditInPlace(t *testing.T) {
	for name, in := range map[string]string{
		"json":  `{"kind": "Widget", "spec": {"a": 1}}`,
		"alias": "base: &b {a: 1}\nkind: Widget\nspec: *b\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := "x.yaml"
			if name == "json" {
				path = "x.json"
			}
			f := &File{Path: path}
			if err := f.parse([]byte(in)); err != nil {
				t.Fatal(err)
			}
			objs, _ := f.Objects()
			want := objs[0].Obj
			want["spec"] = map[string]any{"a": int64(2)}
			if err := objs[0].Rewrite(want); err == nil {
				t.Fatal("rewritten")
			}
			if string(f.Bytes()) != in {
				t.Fatalf("file changed: %s", f.Bytes())
			}
		})
	}
}

func TestRewriteInAList(t *testing.T) {
	in := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: example.com/v1beta1\n  kind: Widget\n  metadata:\n    name: a\n"
	f := &File{Path: "x.yaml"}
	if err := f.parse([]byte(in)); err != nil {
		t.Fatal(err)
	}
	objs, _ := f.Objects()
	want := objs[0].Obj
	want["apiVersion"] = "example.com/v1"
	if err := objs[0].Rewrite(want); err != nil {
		t.Fatal(err)
	}
	if got := string(f.Bytes()); got != strings.Replace(in, "v1beta1", "v1", 1) {
		t.Fatalf("got %s", got)
	}
}
