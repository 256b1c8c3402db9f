// Command krewmanifest renders .krew.yaml, the krew manifest's one source,
// as krew-release-bot renders it on a release tag, with the sums of the
// archives make dist built instead of downloaded ones. It knows the bot's
// template functions only, addURIAndSha and indent, so a template that
// renders here renders for the bot. A platform whose archive was not built
// (a make dist for some platforms only) is left out. Where the assets hold
// checksums.txt (hack/dist.sh writes it), every sum must be the one it
// lists for that archive: a manifest is never written for archives other
// than those the checksums name.
//
//	go run ./hack/krewmanifest -tag v0.1.0 -assets dist < .krew.yaml > dist/plugins.yaml
//
// make krew-manifest runs it (make dist does, after the archives).
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

// notBuilt stands for the sum of an archive make dist did not build.
const notBuilt = "NOT-BUILT"

func main() {
	tag := flag.String("tag", "", "release tag, as the bot gets it (v0.1.0)")
	assets := flag.String("assets", "dist", "directory holding the release archives")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *tag, *assets); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, tag, assets string) error {
	if tag == "" {
		return errors.New("-tag is required")
	}
	src, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	listed, err := checksums(assets)
	if err != nil {
		return err
	}
	rendered, err := render(string(src), tag, func(uri string) (string, error) {
		name := path.Base(uri)
		raw, err := os.ReadFile(filepath.Join(assets, name))
		if errors.Is(err, fs.ErrNotExist) {
			return notBuilt, nil
		}
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(raw)
		got := hex.EncodeToString(sum[:])
		if want, ok := listed[name]; listed != nil && (!ok || want != got) {
			return "", fmt.Errorf("%s: sha256 %s, but checksums.txt lists %q for it: the archives and their checksums are of different builds", name, got, want)
		}
		return got, nil
	})
	if err != nil {
		return err
	}
	if strings.Contains(rendered, notBuilt) {
		if rendered, err = builtOnly(rendered); err != nil {
			return err
		}
	}
	_, err = io.WriteString(out, "# krew manifest: .krew.yaml rendered for "+tag+" by make krew-manifest with the sums of its archives.\n"+rendered)
	return err
}

// checksums reads the assets' checksums.txt (sha256sum's format: a sum, two
// spaces, a name): nil where there is none.
func checksums(assets string) (map[string]string, error) {
	raw, err := os.ReadFile(filepath.Join(assets, "checksums.txt"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if line == "" {
			continue
		}
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			return nil, fmt.Errorf("checksums.txt: %q is not a sum and a name", line)
		}
		out[name] = sum
	}
	return out, nil
}

// render executes the template with the bot's values and functions: the
// URI given to addURIAndSha is a template of its own, over the tag.
func render(src, tag string, sum func(uri string) (string, error)) (string, error) {
	values := struct{ TagName string }{tag}
	t, err := template.New(".krew.yaml").Funcs(template.FuncMap{
		"addURIAndSha": func(uriTemplate, tag string) (string, error) {
			var uri bytes.Buffer
			ut, err := template.New("uri").Parse(uriTemplate)
			if err != nil {
				return "", err
			}
			if err := ut.Execute(&uri, struct{ TagName string }{tag}); err != nil {
				return "", err
			}
			s, err := sum(uri.String())
			return fmt.Sprintf("uri: %s\n    sha256: %s", uri.String(), s), err
		},
		"indent": func(spaces int, v string) string {
			pad := strings.Repeat(" ", spaces)
			return pad + strings.ReplaceAll(strings.ReplaceAll(v, "    sha256:", "sha256:"), "\n", "\n"+pad)
		},
	}).Parse(src)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, values); err != nil {
		return "", err
	}
	// The template's own comments are about the template.
	lines := strings.SplitAfter(b.String(), "\n")
	for len(lines) > 0 && strings.HasPrefix(lines[0], "#") {
		lines = lines[1:]
	}
	return strings.Join(lines, ""), nil
}

// builtOnly leaves out the platforms whose archive was not built.
func builtOnly(rendered string) (string, error) {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(rendered), &m); err != nil {
		return "", err
	}
	spec, _ := m["spec"].(map[string]any)
	platforms, _ := spec["platforms"].([]any)
	var kept []any
	for _, p := range platforms {
		if pm, ok := p.(map[string]any); ok && pm["sha256"] != notBuilt {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return "", errors.New("no archive of any platform of the template was built")
	}
	spec["platforms"] = kept
	out, err := yaml.Marshal(m)
	return string(out), err
}
