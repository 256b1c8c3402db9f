package manifest

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// tree writes files (name → content) into a new directory and reads them
// back as -f DIR -R reads them.
func tree(t *testing.T, files map[string]string) (string, []*File) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	read, err := ReadFiles(t.Context(), []string{dir}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	return dir, read.Files
}

// onDisk is every file of dir by name, temporary files included.
func onDisk(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(raw)
	}
	return out
}

// shortWriter stops after n bytes with the error of a full disk, having
// written those n, as a disk does.
type shortWriter struct {
	*os.File
	n int
}

func (w *shortWriter) Write(p []byte) (int, error) {
	if len(p) <= w.n {
		w.n -= len(p)
		return w.File.Write(p)
	}
	n, _ := w.File.Write(p[:w.n])
	w.n = 0
	return n, syscall.ENOSPC
}

func threeFiles() map[string]string {
	return map[string]string{
		"a.yaml": "kind: A # first\n",
		"b.yaml": "kind: B\nspec:\n  size: 1\n",
		"c.yaml": "kind: C\r\n",
	}
}

// changeAll gives every file new content, longer than the old.
func changeAll(files []*File) map[string]string {
	want := map[string]string{}
	for _, f := range files {
		f.src = append([]byte("# converted\n"), f.src...)
		want[filepath.Base(f.Path)] = string(f.src)
	}
	return want
}

func TestWriteFilesReplacesEachWholeKeepingItsMode(t *testing.T) {
	dir, files := tree(t, threeFiles())
	if err := os.Chmod(files[1].Path, 0o600); err != nil {
		t.Fatal(err)
	}
	want := changeAll(files)
	if err := WriteFiles(t.Context(), files); err != nil {
		t.Fatal(err)
	}
	if got := onDisk(t, dir); !maps.Equal(got, want) {
		t.Fatalf("on disk %q, want %q", got, want)
	}
	for i, mode := range []os.FileMode{0o640, 0o600, 0o640} {
		if info, _ := os.Stat(files[i].Path); info.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", files[i].Path, info.Mode().Perm(), mode)
		}
	}
}

// A write interrupted anywhere (any file, any byte) leaves every file as
// it was and no temporary file behind.
func FuzzWriteFilesInterrupted(f *testing.F) {
	for file := range 3 {
		for _, at := range []int{0, 1, 11, 16, 1000} {
			f.Add(uint8(file), uint16(at))
		}
	}
	f.Fuzz(func(t *testing.T, file uint8, at uint16) {
		original := threeFiles()
		dir, files := tree(t, original)
		changeAll(files)
		failing := filepath.Base(files[int(file)%len(files)].Path)
		defer func(orig func(string, string) (tempFile, error)) { createTemp = orig }(createTemp)
		createTemp = func(dir, pattern string) (tempFile, error) {
			tmp, err := os.CreateTemp(dir, pattern)
			if err != nil || !strings.HasPrefix(pattern, "."+failing+".") {
				return tmp, err
			}
			return &shortWriter{File: tmp, n: int(at)}, nil
		}
		err := WriteFiles(t.Context(), files)
		var werr *WriteError
		if len(files[int(file)%len(files)].src) <= int(at) {
			if err != nil {
				t.Fatalf("a write that fits failed: %v", err)
			}
			return
		}
		if !errors.As(err, &werr) || len(werr.Written) != 0 || len(werr.NotWritten) != 3 || !strings.Contains(err.Error(), failing) {
			t.Fatalf("error %v, want nothing written naming %s", err, failing)
		}
		if got := onDisk(t, dir); !maps.Equal(got, original) {
			t.Fatalf("after an interrupted write: %q, want %q", got, original)
		}
	})
}

// A rename that fails (the last call, after every file is staged) leaves
// the files before it written, the rest as they were, and says which.
func TestWriteFilesSaysWhichWereWrittenWhenARenameFails(t *testing.T) {
	original := threeFiles()
	dir, files := tree(t, original)
	want := changeAll(files)
	defer func(orig func(string, string) error) { rename = orig }(rename)
	renames := 0
	rename = func(from, to string) error {
		if renames++; renames == 2 {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EIO}
		}
		return os.Rename(from, to)
	}
	err := WriteFiles(t.Context(), files)
	var werr *WriteError
	if !errors.As(err, &werr) {
		t.Fatalf("error %v, want a WriteError", err)
	}
	if !slices.Equal(werr.Written, []string{files[0].Path}) || !slices.Equal(werr.NotWritten, []string{files[1].Path, files[2].Path}) {
		t.Fatalf("written %v, not written %v", werr.Written, werr.NotWritten)
	}
	for _, name := range []string{files[0].Path, files[1].Path, files[2].Path} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%q does not name %s", err, name)
		}
	}
	got := onDisk(t, dir)
	if got["a.yaml"] != want["a.yaml"] || got["b.yaml"] != original["b.yaml"] || got["c.yaml"] != original["c.yaml"] || len(got) != 3 {
		t.Fatalf("on disk %q", got)
	}
}

func TestWriteFilesStopsWhenCancelledBeforeTheRenames(t *testing.T) {
	original := threeFiles()
	dir, files := tree(t, original)
	changeAll(files)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := WriteFiles(ctx, files); !errors.Is(err, ctx.Err()) {
		t.Fatalf("error %v, want the cancel", err)
	}
	if got := onDisk(t, dir); !maps.Equal(got, original) {
		t.Fatalf("on disk %q, want %q", got, original)
	}
}

// A symlink out of the tree is refused by name before any file is
// written; one inside it is written through, and stays a link.
func TestWriteFilesOnlyInsideTheTree(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "elsewhere.yaml")
	if err := os.WriteFile(outside, []byte("kind: Elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, content := range map[string]string{"a.yaml": "kind: A\n", "real.yaml": "kind: Real\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out.yaml")); err != nil {
		t.Fatal(err)
	}
	read, err := ReadFiles(t.Context(), []string{dir}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	changeAll(read.Files)
	err = WriteFiles(t.Context(), read.Files)
	var outErr *OutsideTreeError
	if !errors.As(err, &outErr) || outErr.Path != filepath.Join(dir, "out.yaml") || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("error %v, want out.yaml refused", err)
	}
	if raw, _ := os.ReadFile(outside); string(raw) != "kind: Elsewhere\n" {
		t.Fatalf("written through the link: %q", raw)
	}
	if raw, _ := os.ReadFile(filepath.Join(dir, "a.yaml")); string(raw) != "kind: A\n" {
		t.Fatalf("a file was written before the refusal: %q", raw)
	}

	// Inside the tree: the target is written, the link stays a link.
	if err := os.Remove(filepath.Join(dir, "out.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.yaml", filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	read, err = ReadFiles(t.Context(), []string{dir}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	changeAll(read.Files)
	if err := WriteFiles(t.Context(), read.Files); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Lstat(filepath.Join(dir, "link.yaml")); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", info, err)
	}
	if raw, _ := os.ReadFile(filepath.Join(dir, "real.yaml")); string(raw) != "# converted\nkind: Real\n" {
		t.Fatalf("real.yaml: %q", raw)
	}
}
