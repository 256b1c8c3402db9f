package manifest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// A file is never truncated and then written: a size limit, a full disk or
// a crash half-way would leave it cut short. Its new content goes to a
// temporary file in its own folder (a rename is atomic only within one
// file system), synced, and is renamed over it once every file of the run
// has been staged so.

// tempFile is where a file's new content is staged.
type tempFile interface {
	io.Writer
	Name() string
	Sync() error
	Close() error
}

// createTemp and rename are the two file system calls a write depends on,
// variables so that a test can fail them where the disk would.
var (
	createTemp = func(dir, pattern string) (tempFile, error) { return os.CreateTemp(dir, pattern) }
	rename     = os.Rename
)

// OutsideTreeError is a file found under a directory the user named whose
// real path is elsewhere (a symlink out of the tree): it is not written
// through.
type OutsideTreeError struct {
	Path   string
	Target string
	Root   string
}

func (e *OutsideTreeError) Error() string {
	return fmt.Sprintf("%s is a symlink to %s, outside %s: not written through, nothing was written (convert the file where it lives, -f %s, then this tree again)", e.Path, e.Target, e.Root, e.Target)
}

// WriteError is a write of files that did not finish: each file is either
// written whole (Written) or left as it was (NotWritten).
type WriteError struct {
	Written    []string
	NotWritten []string
	Err        error
}

func (e *WriteError) Error() string {
	if len(e.Written) == 0 {
		return fmt.Sprintf("%v; nothing was written, every file is as it was", e.Err)
	}
	return fmt.Sprintf("%v; written: %s; not written, as they were: %s", e.Err, strings.Join(e.Written, ", "), strings.Join(e.NotWritten, ", "))
}

func (e *WriteError) Unwrap() error { return e.Err }

// staged is one file's new content, written and synced beside it.
type staged struct {
	file   *File
	target string // the real path, a symlink inside the tree resolved
	temp   string
}

// WriteFiles writes the files' content, each whole or not at all, all of
// them or (a *WriteError) with the report of which are written. A file
// that is a symlink out of the tree it was found in is refused before
// anything is written. Cancelling ctx before the files are renamed into
// place writes none.
func WriteFiles(ctx context.Context, files []*File) error {
	var all []*staged
	byTarget := map[string]*File{}
	for _, f := range files {
		target, err := f.realPath()
		if err != nil {
			return err
		}
		if other, ok := byTarget[target]; ok {
			// A symlink in the tree and the file it leads to: one file
			// on disk, written once, if both say the same.
			if !bytes.Equal(other.Bytes(), f.Bytes()) {
				return fmt.Errorf("%s and %s are the same file and would be written differently", other.Path, f.Path)
			}
			continue
		}
		byTarget[target] = f
		all = append(all, &staged{file: f, target: target})
	}
	notWritten := func(from int) []string {
		var out []string
		for _, s := range all[from:] {
			out = append(out, s.file.Path)
		}
		return out
	}
	cleanup := func(from int) {
		for _, s := range all[from:] {
			if s.temp != "" {
				_ = os.Remove(s.temp)
			}
		}
	}
	for _, s := range all {
		if err := ctx.Err(); err != nil {
			cleanup(0)
			return &WriteError{NotWritten: notWritten(0), Err: err}
		}
		if err := s.stage(); err != nil {
			cleanup(0)
			return &WriteError{NotWritten: notWritten(0), Err: fmt.Errorf("%s: %w", s.file.Path, err)}
		}
	}
	if err := ctx.Err(); err != nil {
		cleanup(0)
		return &WriteError{NotWritten: notWritten(0), Err: err}
	}
	// From here every rename is a whole file: they run to the end, not
	// stopped half-way by a cancel, so the set is left whole too.
	var written []string
	for i, s := range all {
		if err := rename(s.temp, s.target); err != nil {
			cleanup(i)
			return &WriteError{Written: written, NotWritten: notWritten(i), Err: fmt.Errorf("%s: %w", s.file.Path, err)}
		}
		syncDir(filepath.Dir(s.target))
		written = append(written, s.file.Path)
	}
	return nil
}

// stage writes the file's content to a temporary file beside its target,
// with the target's permissions, and syncs it.
func (s *staged) stage() error {
	info, err := os.Stat(s.target)
	if err != nil {
		return err
	}
	tmp, err := createTemp(filepath.Dir(s.target), "."+filepath.Base(s.target)+".*.tmp")
	if err != nil {
		return err
	}
	s.temp = tmp.Name()
	_, err = tmp.Write(s.file.Bytes())
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(s.temp, info.Mode().Perm())
	}
	return err
}

// syncDir makes a rename in dir durable. Where a directory cannot be
// synced (Windows) the rename is as durable as that system makes it.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// realPath is the file's path with symlinks resolved, refused when it
// leaves the directory the user named. A file named itself is the user's
// own choice, wherever its link leads.
func (f *File) realPath() (string, error) {
	target, err := filepath.EvalSymlinks(f.Path)
	if err != nil {
		return "", err
	}
	if f.root == "" || f.root == f.Path {
		return target, nil
	}
	root, err := filepath.EvalSymlinks(f.root)
	if err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(root, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", &OutsideTreeError{Path: f.Path, Target: target, Root: f.root}
	}
	return target, nil
}
