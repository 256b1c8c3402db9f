package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
)

func midMigration() StatusItem {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1beta1", Served: true, Deprecated: true},
				{Name: "v1", Served: true, Storage: true},
			},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1beta1", "v1"}},
	}
	n := int64(42)
	return StatusItem{Assessment: stages.Assess(crd), Objects: &n}
}

func TestWriteStatusTable(t *testing.T) {
	for _, tc := range []struct {
		format Format
		want   []string
		absent []string
	}{
		{FormatTable, []string{
			"CRD                   VERSION   SERVED   STORAGE   DEPRECATED   STORED   STAGE",
			"widgets.example.com   v1        yes      yes       no           yes      storage",
			"                      v1beta1   yes      no        yes          yes      deprecated",
			"widgets.example.com   None         run: kubectl crdversion migrate widgets.example.com (objects may still be stored at v1beta1)",
			"migration pending",
		}, []string{"OBJECTS", "42"}},
		{FormatWide, []string{"OBJECTS", "WARNING", "42", "example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"}, nil},
	} {
		var buf bytes.Buffer
		if err := WriteStatus(&buf, tc.format, []StatusItem{midMigration()}, false); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("format %q: output lacks %q:\n%s", tc.format, w, out)
			}
		}
		for _, a := range tc.absent {
			if strings.Contains(out, a) {
				t.Errorf("format %q: output has %q:\n%s", tc.format, a, out)
			}
		}
	}
}

func TestWriteStatusDocument(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteStatus(&buf, FormatJSON, []StatusItem{midMigration()}, false); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, buf.String())
	}
	if doc["apiVersion"] != APIVersion || doc["kind"] != "StatusReport" {
		t.Errorf("apiVersion/kind = %v/%v", doc["apiVersion"], doc["kind"])
	}
	item := doc["items"].([]any)[0].(map[string]any)
	for _, key := range []string{"name", "group", "kind", "resource", "scope", "conversion", "storageVersion", "storedVersions", "versions", "problems", "next", "objects"} {
		if _, ok := item[key]; !ok {
			t.Errorf("item lacks %q: %v", key, item)
		}
	}
	// Scripts run next.command as it is; next.step is the same, as data.
	if next := item["next"].(map[string]any); next["command"] != "kubectl crdversion migrate widgets.example.com" || next["step"] == nil {
		t.Errorf("next = %v", next)
	}

	buf.Reset()
	if err := WriteStatus(&buf, FormatYAML, nil, false); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, "kind: StatusReport") || !strings.Contains(got, "items: []") {
		t.Errorf("empty yaml report = %q", got)
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": FormatTable, "table": FormatTable, "wide": FormatWide, "json": FormatJSON, "yaml": FormatYAML} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("ParseFormat(xml) accepted")
	}
}

func TestPrintableEscapesWhatATerminalActsOn(t *testing.T) {
	for in, want := range map[string]string{
		"widgets.example.com":            "widgets.example.com",
		"\x1b[2Jwidgets":                 `\x1b[2Jwidgets`,
		"v1\u2028beta":                   `v1\u2028beta`,
		"bell\a and del\x7f":             `bell\a and del\x7f`,
		"ünïcode stays as it is, tabs\t": "ünïcode stays as it is, tabs\t",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// Several CRDs whose next step is a migration get the one command that
// takes them all; one CRD, or a fleet (one command per cluster), does not.
func TestStatusNamesMigrateAll(t *testing.T) {
	named := func(name, cluster string) StatusItem {
		it := midMigration()
		it.Name, it.Cluster = name, cluster
		it.Next.Step = stages.MigrateStep(name)
		return it
	}
	const all = "the 2 migrations above, in one command: kubectl crdversion migrate --all"
	for _, tc := range []struct {
		name  string
		items []StatusItem
		want  bool
	}{
		{"two migrations", []StatusItem{named("widgets.example.com", ""), named("gadgets.example.com", "")}, true},
		{"one migration", []StatusItem{named("widgets.example.com", "")}, false},
		{"a fleet", []StatusItem{named("widgets.example.com", "a"), named("gadgets.example.com", "b")}, false},
	} {
		var buf bytes.Buffer
		if err := WriteStatus(&buf, FormatTable, tc.items, false); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(buf.String(), "migrate --all"); got != tc.want {
			t.Errorf("%s: names migrate --all: %v, want %v:\n%s", tc.name, got, tc.want, buf.String())
		}
		if tc.want && !strings.Contains(buf.String(), all) {
			t.Errorf("%s: lacks %q:\n%s", tc.name, all, buf.String())
		}
	}
}
