package packaging

import (
	"archive/tar"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fixtures"
	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/sandbox"
)

// make image writes an OCI image layout (no registry, no Docker), read here
// with go-containerregistry: an index of linux/amd64 and linux/arm64, each
// image non-root, HOME a directory its layer holds, the static binary its
// entrypoint. Pushed with the release's own command to a registry served
// here, each platform's node resolves its own image. The linux/amd64
// binary, taken from its layer, runs: version, and migrate --all against
// the in-process API server.
func TestMakeImage(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("runs the linux/amd64 binary of the image")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed (.ci/run installs it)")
	}
	repo, dist := copyRepo(t), t.TempDir()
	cmd := exec.CommandContext(t.Context(), "make", "image", "DIST="+dist)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	idx, err := layout.ImageIndexFromPath(filepath.Join(dist, "image"))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var exe string
	platforms := map[string]bool{}
	for _, m := range im.Manifests {
		if m.Platform == nil {
			t.Fatalf("image %s names no platform", m.Digest)
		}
		p := m.Platform.OS + "/" + m.Platform.Architecture
		platforms[p] = true
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Config.User == "" || cfg.Config.User == "0" || strings.HasPrefix(cfg.Config.User, "0:") || strings.HasPrefix(cfg.Config.User, "root") {
			t.Errorf("%s runs as %q: not non-root", p, cfg.Config.User)
		}
		if len(cfg.Config.Entrypoint) != 1 || cfg.OS != m.Platform.OS || cfg.Architecture != m.Platform.Architecture {
			t.Errorf("%s: entrypoint %v, config for %s/%s", p, cfg.Config.Entrypoint, cfg.OS, cfg.Architecture)
		}
		files := layerFiles(t, img)
		home := ""
		for _, e := range cfg.Config.Env {
			if v, ok := strings.CutPrefix(e, "HOME="); ok {
				home = strings.TrimPrefix(v, "/")
			}
		}
		if hdr, ok := files[home+"/"]; home == "" || !ok || hdr.Mode&0o002 == 0 {
			t.Errorf("%s: HOME %q is not a directory the user can write in its layer", p, home)
		}
		entry := strings.TrimPrefix(cfg.Config.Entrypoint[0], "/")
		if _, ok := files[entry]; !ok {
			t.Fatalf("%s: the entrypoint %s is not in the layer", p, entry)
		}
		if p == "linux/amd64" {
			exe = extract(t, img, entry)
		}
	}
	if !platforms["linux/amd64"] || !platforms["linux/arm64"] {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", platforms)
	}

	pushedAsTheReleaseDoes(t, filepath.Join(dist, "image"), im.Manifests)

	out, err := exec.Command(exe, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "v0.1.0") {
		t.Errorf("the image's binary: version: %v\n%s", err, out)
	}
	sb := sandbox.StartT(t, sandbox.Options{})
	fx, err := fixtures.NewClients(sb.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := fixtures.InstallDemo(t.Context(), fx, 60); err != nil {
		t.Fatal(err)
	}
	run := exec.CommandContext(t.Context(), exe, "migrate", "--all", "--switch-grace=0", "-q", "--kubeconfig", sb.KubeconfigPath())
	run.Env = []string{"HOME=" + t.TempDir()}
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("the image's binary: migrate --all: %v\n%s", err, out)
	}
	crd, err := fx.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "certificates.pki.example.com", metav1.GetOptions{})
	if err != nil || len(crd.Status.StoredVersions) != 1 {
		t.Errorf("after the image's migrate: %v, storedVersions %v", err, crd.Status.StoredVersions)
	}
}

// pushedAsTheReleaseDoes pushes the layout with the release's own command
// (crane push --index, .github/workflows/release.yml) to a registry served
// here, and pulls it back as a node does, by platform: each platform
// resolves to its image of the layout, and crane digest names the index.
func pushedAsTheReleaseDoes(t *testing.T, layoutDir string, images []v1.Descriptor) {
	t.Helper()
	workflow, err := os.ReadFile(filepath.Join(root, ".github", "workflows", "release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	const push, pinned = `$CRANE push --index dist/image "$ref"`, "github.com/google/go-containerregistry/cmd/crane@"
	i := strings.Index(string(workflow), pinned)
	if i < 0 || !strings.Contains(string(workflow), push) {
		t.Fatalf("release.yml no longer pushes with %s...: %q", pinned, push)
	}
	crane := strings.Fields(string(workflow[i:]))[0]
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	ref := strings.TrimPrefix(reg.URL, "http://") + "/kubectl-crdversion/kubectl-crdversion:v0.1.0"
	craneRun := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "go", append([]string{"run", crane}, args...)...)
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("crane %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	craneRun("push", "--index", layoutDir, ref)
	digest := craneRun("digest", ref)

	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(r)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest.String() != digest || !desc.MediaType.IsIndex() {
		t.Errorf("the pushed %s is %s %s; crane digest says %s", ref, desc.MediaType, desc.Digest, digest)
	}
	for _, want := range images {
		p := *want.Platform
		img, err := remote.Image(r, remote.WithPlatform(p))
		if err != nil {
			t.Errorf("a %s node pulling %s: %v", p, ref, err)
			continue
		}
		if got, err := img.Digest(); err != nil || got != want.Digest {
			t.Errorf("a %s node pulling %s gets %s (%v), want the layout's %s", p, ref, got, err, want.Digest)
		}
	}
}

// layerFiles are the headers of every file of img's layers, by path.
func layerFiles(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	files := map[string]*tar.Header{}
	eachFile(t, img, func(h *tar.Header, _ io.Reader) { files[h.Name] = h })
	return files
}

// extract writes the file name of img's layers to a temporary file, as an
// executable, and returns its path.
func extract(t *testing.T, img v1.Image, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), filepath.Base(name))
	eachFile(t, img, func(h *tar.Header, r io.Reader) {
		if h.Name != name {
			return
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := io.Copy(f, r); err != nil {
			t.Fatal(err)
		}
	})
	return path
}

func eachFile(t *testing.T, img v1.Image, each func(*tar.Header, io.Reader)) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			each(h, tr)
		}
		rc.Close()
	}
}
