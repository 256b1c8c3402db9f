package releases

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// What the Action downloads, served from file:// fixtures: the archive of
// its own release is checked against the sums pinned in the Action, so a
// release replaced together with its checksums.txt is refused; another
// version against the checksum input, or (with a warning) the release's
// checksums.txt; a Windows runner is refused in one line.
func TestActionDownloadsOnlyWhatItTrusts(t *testing.T) {
	defaultVersion := actionDefault(t, "version")
	ownArchive := "kubectl-crdversion_" + defaultVersion + "_linux_amd64.tar.gz"
	const other = "v9.9.9"
	otherArchive := "kubectl-crdversion_" + other + "_linux_amd64.tar.gz"

	releases := t.TempDir()
	// A stand-in plugin that says it ran: whatever the release holds runs.
	fake := fakeArchive(t)
	fakeSum := sha256Hex(fake)
	publish := func(version, archive, sum string) {
		t.Helper()
		dir := filepath.Join(releases, version)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		mustWriteFile(t, filepath.Join(dir, archive), fake)
		mustWriteFile(t, filepath.Join(dir, "checksums.txt"), []byte(sum+"  "+archive+"\n"))
	}
	publish(defaultVersion, ownArchive, fakeSum) // replaced: archive and sums agree
	publish(other, otherArchive, fakeSum)
	publish("v9.9.8", "kubectl-crdversion_v9.9.8_linux_amd64.tar.gz", strings.Repeat("0", 64)) // a broken download

	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	if err := os.MkdirAll(filepath.Join(repo, "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustWriteFile(t, filepath.Join(repo, "config", "crd.yaml"), []byte("# none\n"))
	git("add", "-A")
	git("commit", "-q", "-m", "CRDs")
	base := git("rev-parse", "HEAD")

	runner := []string{"RUNNER_OS=Linux", "RUNNER_ARCH=X64", "CRDVERSION_RELEASE_URL=file://" + releases}
	const ran = "fake plugin ran"
	for _, tc := range []struct {
		name    string
		inputs  map[string]string
		env     []string
		code    int
		want    []string // in the step's output
		plugin  bool     // the downloaded plugin ran
		warning bool
	}{
		{name: "the own release replaced with its checksums.txt", inputs: map[string]string{}, code: 1,
			want: []string{"::error::refusing to run " + ownArchive, "this Action pins"}},
		{name: "the own release replaced, a checksum input for it", inputs: map[string]string{"checksum": fakeSum}, code: 1,
			want: []string{"this Action pins"}},
		{name: "another version with its checksum", inputs: map[string]string{"version": other, "checksum": "sha256:" + strings.ToUpper(fakeSum)}, plugin: true},
		{name: "another version with another checksum", inputs: map[string]string{"version": other, "checksum": strings.Repeat("a", 64)}, code: 1,
			want: []string{"refusing to run " + otherArchive, "the checksum input is " + strings.Repeat("a", 64)}},
		{name: "another version, its checksums.txt alone", inputs: map[string]string{"version": other}, plugin: true, warning: true},
		{name: "another version, a broken download", inputs: map[string]string{"version": "v9.9.8"}, code: 1, warning: true,
			want: []string{"refusing to run", "the release's checksums.txt lists is " + strings.Repeat("0", 64)}},
		{name: "a Windows runner", inputs: map[string]string{}, env: []string{"RUNNER_OS=Windows"}, code: 1,
			want: []string{"::error::this Action runs on Linux and macOS runners, not Windows"}},
		{name: "a Windows runner, the plugin on PATH", inputs: map[string]string{"version": ""}, env: []string{"RUNNER_OS=Windows"}, code: 1,
			want: []string{"::error::this Action runs on Linux and macOS runners, not Windows"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inputs := map[string]string{"manifests": "config", "base": base}
			for k, v := range tc.inputs {
				inputs[k] = v
			}
			_, out, code := runAction(t, repo, inputs, append(runner, tc.env...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output lacks %q:\n%s", w, out)
				}
			}
			if got := strings.Contains(out, ran); got != tc.plugin {
				t.Errorf("the downloaded plugin ran: %v, want %v\n%s", got, tc.plugin, out)
			}
			if got := strings.Contains(out, "::warning::"); got != tc.warning {
				t.Errorf("a warning that only the release's checksums.txt was checked: %v, want %v\n%s", got, tc.warning, out)
			}
			if tc.code != 0 && strings.Count(strings.TrimSpace(out), "\n") > 1 {
				t.Errorf("a refusal of more than a line or two:\n%s", out)
			}
		})
	}
}

// The pinned sums are those make dist writes for the Action's default
// version: one line per platform hack/dist.sh builds, named as it names
// them, in sha256sum's format. That they are this tree's bytes is the
// release job's check (hack/action/pin.sh -check, after make dist and
// before anything is published), made on the tagged commit.
func TestActionPinsItsOwnRelease(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	version := actionDefault(t, "version")
	dist, err := os.ReadFile(filepath.Join(root, "hack", "dist.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^DEFAULT_PLATFORMS="([^"]+)"$`).FindSubmatch(dist)
	if m == nil {
		t.Fatal("no DEFAULT_PLATFORMS in hack/dist.sh")
	}
	var want []string
	for _, p := range strings.Fields(string(m[1])) {
		goos, arch, _ := strings.Cut(p, "/")
		ext := ".tar.gz"
		if goos == "windows" {
			ext = ".zip"
		}
		want = append(want, fmt.Sprintf("kubectl-crdversion_%s_%s_%s%s", version, goos, arch, ext))
	}
	raw, err := os.ReadFile(filepath.Join(root, "hack", "action", "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	line := regexp.MustCompile(`^[0-9a-f]{64}  (\S+)$`)
	for _, l := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("hack/action/checksums.txt: %q is not a sha256sum line", l)
			continue
		}
		got = append(got, m[1])
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("hack/action/checksums.txt names\n%s\nhack/dist.sh makes for %s\n%s", strings.Join(got, "\n"), version, strings.Join(want, "\n"))
	}

	// The release job refuses to publish archives the pin does not name.
	wf, err := os.ReadFile(filepath.Join(root, ".github", "workflows", "release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var release struct {
		Jobs struct {
			Release struct {
				Steps []struct {
					Uses string `json:"uses"`
					Run  string `json:"run"`
				} `json:"steps"`
			} `json:"release"`
		} `json:"jobs"`
	}
	if err := yaml.Unmarshal(wf, &release); err != nil {
		t.Fatal(err)
	}
	dists, pin, publish := -1, -1, -1
	for i, s := range release.Jobs.Release.Steps {
		switch {
		case strings.Contains(s.Run, "make dist"):
			dists = i
		case strings.Contains(s.Run, "hack/action/pin.sh -check dist"):
			pin = i
		case strings.HasPrefix(s.Uses, "softprops/action-gh-release@"):
			publish = i
		}
	}
	if dists < 0 || pin < dists || publish < pin {
		t.Errorf("want make dist, then hack/action/pin.sh -check dist, then the release: steps at %d, %d, %d", dists, pin, publish)
	}
}

// actionDefault is the default of action.yml's input.
func actionDefault(t *testing.T, input string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Inputs map[string]struct {
			Default string `json:"default"`
		} `json:"inputs"`
	}
	if err := yaml.Unmarshal(raw, &action); err != nil {
		t.Fatal(err)
	}
	return action.Inputs[input].Default
}

// fakeArchive is a release archive whose kubectl-crdversion only says it ran.
func fakeArchive(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	script := []byte("#!/bin/sh\necho 'fake plugin ran'\n")
	if err := tw.WriteHeader(&tar.Header{Name: "kubectl-crdversion", Mode: 0o755, Size: int64(len(script))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(script); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func mustWriteFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
