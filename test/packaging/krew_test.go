package packaging

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"
)

// botFuncs are krew-release-bot's template functions and nothing else
// (its pkg/source/template.go: no sprig): addURIAndSha renders the URI as
// a template of its own over the tag and puts the asset's sum under it;
// indent pads every line.
func botFuncs(sum func(uri string) string) template.FuncMap {
	return template.FuncMap{
		"addURIAndSha": func(uriTemplate, tag string) (string, error) {
			var uri bytes.Buffer
			ut, err := template.New("url").Parse(uriTemplate)
			if err != nil {
				return "", err
			}
			if err := ut.Execute(&uri, struct{ TagName string }{tag}); err != nil {
				return "", err
			}
			return fmt.Sprintf("uri: %s\n    sha256: %s", uri.String(), sum(uri.String())), nil
		},
		"indent": func(spaces int, v string) string {
			pad := strings.Repeat(" ", spaces)
			return pad + strings.ReplaceAll(strings.ReplaceAll(v, "    sha256:", "sha256:"), "\n", "\n"+pad)
		},
	}
}

// .krew.yaml renders with the bot's functions into a manifest krew takes,
// and it is the one source: the committed plugins.yaml is that rendering,
// with the sums of a release build.
func TestKrewTemplateRendersForTheBot(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, ".krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(root, "plugins.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var known plugin
	if err := yaml.Unmarshal(committed, &known); err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for _, p := range known.Spec.Platforms {
		sums[p.URI] = p.SHA256
	}
	tmpl, err := template.New(".krew.yaml").Funcs(botFuncs(func(uri string) string {
		if s, ok := sums[uri]; ok {
			return s
		}
		t.Errorf("the template names %s, which plugins.yaml does not", uri)
		return strings.Repeat("0", 64)
	})).Parse(string(src))
	if err != nil {
		t.Fatalf("krew-release-bot cannot parse .krew.yaml: %v", err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, struct{ TagName string }{known.Spec.Version}); err != nil {
		t.Fatalf("krew-release-bot cannot render .krew.yaml: %v", err)
	}
	var rendered plugin
	if err := yaml.Unmarshal(out.Bytes(), &rendered); err != nil {
		t.Fatalf("rendered .krew.yaml is not YAML: %v\n%s", err, out.String())
	}
	checkManifest(t, rendered, known.Spec.Version, []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"})

	// plugins.yaml is the rendering, under its own header line.
	_, body, _ := strings.Cut(string(committed), "\n")
	if want := withoutComments(out.String()); body != want {
		t.Errorf("plugins.yaml is not .krew.yaml rendered (make dist writes it):\n--- plugins.yaml\n%s\n--- rendered\n%s", body, want)
	}
}

func withoutComments(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for len(lines) > 0 && strings.HasPrefix(lines[0], "#") {
		lines = lines[1:]
	}
	return strings.Join(lines, "")
}
