// Command image writes the plugin's container image as an OCI image layout:
// a multi-platform index of one image per platform, each FROM scratch with
// the static binary make builds, an empty /tmp for HOME (kubectl's cache),
// and a non-root user. The bytes are the same for the same binaries: fixed
// times and owners, gzip without a name or time.
//
//	go run ./hack/image -version v0.1.0 -bin DIR -out DIR linux/amd64 linux/arm64
//
// DIR/OS-ARCH/kubectl-crdversion is each platform's binary.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const (
	binary  = "usr/local/bin/kubectl-crdversion"
	nonRoot = "65532:65532"
	source  = "https://github.com/kubectl-crdversion/kubectl-crdversion"

	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
}

func main() {
	version := flag.String("version", "", "the release the image is tagged with")
	bin := flag.String("bin", "", "directory holding OS-ARCH/kubectl-crdversion for each platform")
	out := flag.String("out", "", "directory to write the OCI image layout to (replaced)")
	flag.Parse()
	if *version == "" || *bin == "" || *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: image -version V -bin DIR -out DIR OS/ARCH ...")
		os.Exit(1)
	}
	if err := write(*out, *bin, *version, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// write lays the image out in a fresh directory, then moves it to out:
// an interrupted run leaves no half layout.
func write(out, bin, version string, platforms []string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(out)), ".image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	l := layout{dir: tmp}
	var images []descriptor
	for _, p := range platforms {
		goos, arch, ok := strings.Cut(p, "/")
		if !ok {
			return fmt.Errorf("platform %q is not OS/ARCH", p)
		}
		exe, err := os.ReadFile(filepath.Join(bin, goos+"-"+arch, "kubectl-crdversion"))
		if err != nil {
			return err
		}
		d, err := l.image(platform{OS: goos, Architecture: arch}, exe, version)
		if err != nil {
			return err
		}
		images = append(images, d)
	}
	// index.json lists the platform images themselves: crane push --index
	// pushes it as the release's index, and a node resolves its platform
	// there. An index of an index would leave it no platform to match.
	if err := l.file("index.json", map[string]any{"schemaVersion": 2, "mediaType": mediaIndex, "manifests": images}); err != nil {
		return err
	}
	if err := l.file("oci-layout", map[string]string{"imageLayoutVersion": "1.0.0"}); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

type layout struct{ dir string }

// image writes one platform's layer, config and manifest.
func (l layout) image(p platform, exe []byte, version string) (descriptor, error) {
	raw, err := layer(exe)
	if err != nil {
		return descriptor{}, err
	}
	diffID := sha256.Sum256(raw)
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return descriptor{}, err
	}
	if _, err := zw.Write(raw); err != nil {
		return descriptor{}, err
	}
	if err := zw.Close(); err != nil {
		return descriptor{}, err
	}
	layerDesc, err := l.raw(mediaLayer, gz.Bytes())
	if err != nil {
		return descriptor{}, err
	}
	created := time.Unix(0, 0).UTC().Format(time.RFC3339)
	config, err := l.blob(mediaConfig, map[string]any{
		"created": created, "os": p.OS, "architecture": p.Architecture,
		"config": map[string]any{
			"User":       nonRoot,
			"Env":        []string{"HOME=/tmp", "PATH=/usr/local/bin"},
			"Entrypoint": []string{"/" + binary},
			"WorkingDir": "/tmp",
			"Labels":     map[string]string{"org.opencontainers.image.source": source, "org.opencontainers.image.version": version},
		},
		"rootfs":  map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diffID[:])}},
		"history": []map[string]string{{"created": created, "created_by": "make image"}},
	})
	if err != nil {
		return descriptor{}, err
	}
	m, err := l.blob(mediaManifest, map[string]any{"schemaVersion": 2, "mediaType": mediaManifest, "config": config, "layers": []descriptor{layerDesc}})
	if err != nil {
		return descriptor{}, err
	}
	m.Platform = &p
	return m, nil
}

// layer is the image's one layer, uncompressed: /tmp (world-writable, with
// the sticky bit) and the binary, owned by root, at time zero.
func layer(exe []byte) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	dirs := []struct {
		name string
		mode int64
	}{{"tmp/", 0o1777}, {"usr/", 0o755}, {"usr/local/", 0o755}, {"usr/local/bin/", 0o755}}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: binary, Mode: 0o755, Size: int64(len(exe)), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(exe); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// blob writes v as JSON under its digest.
func (l layout) blob(mediaType string, v any) (descriptor, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return descriptor{}, err
	}
	return l.raw(mediaType, raw)
}

func (l layout) raw(mediaType string, raw []byte) (descriptor, error) {
	sum := sha256.Sum256(raw)
	digest := hex.EncodeToString(sum[:])
	dir := filepath.Join(l.dir, "blobs", "sha256")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return descriptor{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, digest), raw, 0o644); err != nil {
		return descriptor{}, err
	}
	return descriptor{MediaType: mediaType, Digest: "sha256:" + digest, Size: int64(len(raw))}, nil
}

func (l layout) file(name string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(l.dir, name), raw, 0o644)
}
