package packaging

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
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
// and it is the one source: make krew-manifest (hack/krewmanifest) writes
// exactly what the bot renders from the same archives, for every platform
// the template names, each sum that of its archive.
func TestKrewTemplateRendersForTheBot(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, ".krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tag := makefileVersion(t)
	// An archive per platform, each of its own bytes: only the sums matter.
	assets := t.TempDir()
	sums := map[string]string{}
	var checksums strings.Builder
	for _, p := range allPlatforms {
		goos, goarch, _ := strings.Cut(p, "/")
		name := "kubectl-crdversion_" + tag + "_" + goos + "_" + goarch + map[bool]string{true: ".zip", false: ".tar.gz"}[goos == "windows"]
		raw := []byte("archive of " + p)
		if err := writeFile(filepath.Join(assets, name), raw); err != nil {
			t.Fatal(err)
		}
		sums[name] = sha256Of(raw)
		fmt.Fprintf(&checksums, "%s  %s\n", sums[name], name)
	}
	if err := writeFile(filepath.Join(assets, "checksums.txt"), []byte(checksums.String())); err != nil {
		t.Fatal(err)
	}
	tmpl, err := template.New(".krew.yaml").Funcs(botFuncs(func(uri string) string {
		if s, ok := sums[filepath.Base(uri)]; ok {
			return s
		}
		t.Errorf("the template names %s, which no archive is", uri)
		return strings.Repeat("0", 64)
	})).Parse(string(src))
	if err != nil {
		t.Fatalf("krew-release-bot cannot parse .krew.yaml: %v", err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, struct{ TagName string }{tag}); err != nil {
		t.Fatalf("krew-release-bot cannot render .krew.yaml: %v", err)
	}
	rendered := parseManifest(t, "rendered .krew.yaml", out.Bytes())
	checkManifest(t, rendered, tag, allPlatforms)

	// make krew-manifest's generator writes the same, under its own header
	// line, with each archive's sum.
	generated := krewManifest(t, tag, assets)
	_, body, _ := strings.Cut(string(generated), "\n")
	if want := withoutComments(out.String()); body != want {
		t.Errorf("hack/krewmanifest does not render .krew.yaml as the bot does:\n--- generated\n%s\n--- rendered\n%s", body, want)
	}
	checkSums(t, parseManifest(t, "generated plugins.yaml", generated), assets)

	// Archives that are not those checksums.txt lists get no manifest.
	if err := writeFile(filepath.Join(assets, "kubectl-crdversion_"+tag+"_linux_amd64.tar.gz"), []byte("another build")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", "./hack/krewmanifest", "-tag", tag, "-assets", assets)
	cmd.Dir = root
	cmd.Stdin = bytes.NewReader(src)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "checksums.txt lists") {
		t.Errorf("a manifest for archives checksums.txt does not list: %v\n%s", err, out)
	}
}

func withoutComments(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for len(lines) > 0 && strings.HasPrefix(lines[0], "#") {
		lines = lines[1:]
	}
	return strings.Join(lines, "")
}
