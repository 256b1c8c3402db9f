// Package packaging checks what users install: the krew manifest against
// krew's rules, and the release archives make dist builds with the
// manifest make krew-manifest writes for them.
package packaging

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// plugin is krew's Plugin (v1alpha2), every field this manifest uses:
// parsed strictly, a field krew does not know (a typo) fails.
type plugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string     `json:"version"`
		Homepage         string     `json:"homepage"`
		ShortDescription string     `json:"shortDescription"`
		Description      string     `json:"description"`
		Caveats          string     `json:"caveats"`
		Platforms        []platform `json:"platforms"`
	} `json:"spec"`
}

type platform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string `json:"uri"`
	SHA256 string `json:"sha256"`
	Bin    string `json:"bin"`
	Files  []struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"files"`
}

const root = "../.."

// allPlatforms are the platforms a release builds (hack/dist.sh).
var allPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"}

// parseManifest reads a manifest as krew does, but strictly.
func parseManifest(t *testing.T, what string, raw []byte) plugin {
	t.Helper()
	var p plugin
	if err := yaml.UnmarshalStrict(raw, &p); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, raw)
	}
	return p
}

// krewManifest runs make krew-manifest's generator on the archives in
// assets, as the release does.
func krewManifest(t *testing.T, tag, assets string) []byte {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, ".krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", "./hack/krewmanifest", "-tag", tag, "-assets", assets)
	cmd.Dir = root
	cmd.Stdin = bytes.NewReader(src)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/krewmanifest: %v\n%s", err, stderr.String())
	}
	return out
}

// checkSums checks that every platform of the manifest names an archive in
// assets by its sha256, the one checksums.txt lists for it, and that every
// archive there is named.
func checkSums(t *testing.T, m plugin, assets string) {
	t.Helper()
	listed := map[string]string{}
	raw, err := os.ReadFile(filepath.Join(assets, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		sum, name, _ := strings.Cut(strings.TrimSpace(line), "  ")
		listed[name] = sum
	}
	named := map[string]bool{}
	for _, pl := range m.Spec.Platforms {
		name := path.Base(pl.URI)
		named[name] = true
		archive, err := os.ReadFile(filepath.Join(assets, name))
		if err != nil {
			t.Errorf("%s names %s, which is not among the archives: %v", pl.Selector.MatchLabels, name, err)
			continue
		}
		if got := sha256Of(archive); pl.SHA256 != got || listed[name] != got {
			t.Errorf("%s: the manifest says sha256 %s, checksums.txt %s, the archive is %s", name, pl.SHA256, listed[name], got)
		}
	}
	for name := range listed {
		if !named[name] {
			t.Errorf("archive %s is in checksums.txt, not in the manifest", name)
		}
	}
}

func sha256Of(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

func writeFile(name string, raw []byte) error { return os.WriteFile(name, raw, 0o644) }

var (
	semver    = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$`)
	sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)
	nameRule  = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
)

func makefileVersion(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VERSION \?= (\S+)$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("Makefile has no VERSION ?= line")
	}
	return string(m[1])
}

// checkManifest applies krew's rules (krew.sigs.k8s.io/docs/developer-guide/plugin-manifest).
func checkManifest(t *testing.T, p plugin, version string, want []string) {
	t.Helper()
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" {
		t.Errorf("apiVersion/kind = %s/%s", p.APIVersion, p.Kind)
	}
	if p.Metadata.Name != "crdversion" || !nameRule.MatchString(p.Metadata.Name) || strings.HasPrefix(p.Metadata.Name, "kubectl") {
		t.Errorf("metadata.name = %q", p.Metadata.Name)
	}
	s := p.Spec
	if s.ShortDescription == "" || len(s.ShortDescription) > 50 || strings.ContainsAny(s.ShortDescription, "\r\n") {
		t.Errorf("shortDescription %q: must be 1..50 characters on one line", s.ShortDescription)
	}
	if strings.TrimSpace(s.Description) == "" {
		t.Error("description is empty")
	}
	if !strings.HasPrefix(s.Homepage, "https://") {
		t.Errorf("homepage %q is not https", s.Homepage)
	}
	if !semver.MatchString(s.Version) || s.Version != version {
		t.Errorf("version %q: want semver %q", s.Version, version)
	}
	seen := map[string]bool{}
	for _, pl := range s.Platforms {
		os, arch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		key := os + "/" + arch
		if seen[key] {
			t.Errorf("platform %s listed twice", key)
		}
		seen[key] = true
		if os != "linux" && os != "darwin" && os != "windows" || arch == "" || len(pl.Selector.MatchLabels) != 2 {
			t.Errorf("platform selector %v: os and arch, nothing else", pl.Selector.MatchLabels)
		}
		if !strings.HasPrefix(pl.URI, "https://") || !strings.Contains(pl.URI, s.Version) ||
			!(strings.HasSuffix(pl.URI, ".tar.gz") || strings.HasSuffix(pl.URI, ".zip")) {
			t.Errorf("%s: uri %q", key, pl.URI)
		}
		if !sha256Hex.MatchString(pl.SHA256) {
			t.Errorf("%s: sha256 %q", key, pl.SHA256)
		}
		if (os == "windows") != strings.HasSuffix(pl.Bin, ".exe") || strings.TrimSuffix(pl.Bin, ".exe") != "kubectl-crdversion" {
			t.Errorf("%s: bin %q", key, pl.Bin)
		}
		copies := false
		for _, f := range pl.Files {
			if f.From == "" || f.To == "" {
				t.Errorf("%s: files entry %+v: from and to must be set", key, f)
			}
			copies = copies || f.From == pl.Bin
			if os == "windows" && f.From == "kubectl_complete-crdversion" {
				t.Errorf("%s: ships the completion shell script, which Windows cannot run", key)
			}
		}
		if len(pl.Files) > 0 && !copies {
			t.Errorf("%s: files do not copy the binary %s", key, pl.Bin)
		}
	}
	if len(s.Platforms) == 0 {
		t.Error("no platform")
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("platform %s missing", w)
		}
	}
}

// dist runs make dist for this machine's platform into a directory of its
// own: the archive, checksums.txt and plugins.yaml.
func dist(t *testing.T, version string) string {
	t.Helper()
	for _, tool := range []string{"make", "bash", "tar", "gzip", "zip", "sha256sum", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (.ci/run installs it)", tool)
		}
	}
	dir := t.TempDir()
	cmd := exec.Command("make", "--no-print-directory", "dist", "VERSION="+version, "DIST="+dir, "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make dist: %v\n%s", err, out)
	}
	return dir
}

func TestHostArchive(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("archives are built on unix")
	}
	const version = "v0.1.0-test"
	dir := dist(t, version)
	archive := filepath.Join(dir, "kubectl-crdversion_"+version+"_"+runtime.GOOS+"_"+runtime.GOARCH+".tar.gz")
	raw, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	want := hex.EncodeToString(sum[:])

	sums, _ := os.ReadFile(filepath.Join(dir, "checksums.txt"))
	if !strings.Contains(string(sums), want+"  "+filepath.Base(archive)) {
		t.Errorf("checksums.txt lacks %s %s:\n%s", want, filepath.Base(archive), sums)
	}
	// The manifest make dist wrote (make krew-manifest) names this archive
	// by its sum, for this version, and parses as krew's.
	raw, err = os.ReadFile(filepath.Join(dir, "plugins.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := parseManifest(t, "make dist's plugins.yaml", raw)
	checkManifest(t, m, version, []string{runtime.GOOS + "/" + runtime.GOARCH})
	checkSums(t, m, dir)
	if len(m.Spec.Platforms) != 1 || m.Spec.Platforms[0].SHA256 != want {
		t.Errorf("manifest does not name the archive's sha256 %s: %+v", want, m.Spec.Platforms)
	}
	raw, err = os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}

	extracted := t.TempDir()
	files := untar(t, raw, extracted)
	for _, name := range []string{"kubectl-crdversion", "LICENSE", "kubectl_complete-crdversion"} {
		if _, ok := files[name]; !ok {
			t.Errorf("archive lacks %s (has %v)", name, files)
		}
	}
	if files["kubectl-crdversion"]&0o111 == 0 {
		t.Errorf("binary is not executable: %v", files["kubectl-crdversion"])
	}
	out, err := exec.Command(filepath.Join(extracted, "kubectl-crdversion"), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "kubectl-crdversion "+version+" ") {
		t.Errorf("version: %v %q", err, out)
	}

	again := dist(t, version)
	raw2, err := os.ReadFile(filepath.Join(again, filepath.Base(archive)))
	if err != nil || !bytes.Equal(raw2, raw) {
		t.Errorf("archive is not reproducible: rebuilt bytes differ (%v)", err)
	}
}

// untar extracts the archive into dir and returns each name's mode.
func untar(t *testing.T, raw []byte, dir string) map[string]os.FileMode {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]os.FileMode{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h.FileInfo().Mode()
		f, err := os.OpenFile(filepath.Join(dir, filepath.Base(h.Name)), os.O_CREATE|os.O_WRONLY, h.FileInfo().Mode())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}
