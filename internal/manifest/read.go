package manifest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// File is one YAML file of one or more documents.
type File struct {
	Path string
	// root is the -f argument the file was found under: the tree it may
	// be written in.
	root string
	// bom is a UTF-8 byte-order mark the file starts with: kept out of
	// src, so that every position the parser reports is one in src, and
	// put back when the file is written.
	bom bool
	// lineBase and docBase place a document edited on its own (RewriteAll)
	// in its file: what it says line 1, document 1 is in the file line
	// lineBase+1, document docBase+1.
	lineBase, docBase int
	src               []byte
	docs              []*yaml.Node
}

// CRD is a CustomResourceDefinition found in a file.
type CRD struct {
	File  *File
	Index int // which document of the file
	// Item is its index in the document's List, or -1: the document is
	// the CRD.
	Item int
	Obj  *apiextensionsv1.CustomResourceDefinition
}

// ReadEditable reads the CRDs of a file, or of every .yaml/.yml/.json file
// below a directory, each with the file it is in, to edit in place.
func ReadEditable(ctx context.Context, path string) ([]CRD, error) {
	info, err := statPath(path)
	if err != nil {
		return nil, err
	}
	var crds []CRD
	add := func(p string) error {
		f, err := readFile(ctx, path, p)
		if err != nil {
			return err
		}
		found, err := f.CRDs()
		crds = append(crds, found...)
		return err
	}
	if !info.IsDir() {
		return crds, add(path)
	}
	return crds, walkManifests(path, true, add)
}

// walkManifests calls fn with every .yaml, .yml and .json file in dir,
// and below it when recursive.
func walkManifests(dir string, recursive bool, fn func(path string) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != dir && !recursive:
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			return fn(p)
		}
		return nil
	})
}

// readFile reads and parses one file, found under root.
func readFile(ctx context.Context, root, path string) (*File, error) {
	src, err := readBounded(ctx, path, opener(path))
	if err != nil {
		return nil, err
	}
	f := &File{Path: path, root: root}
	if err := f.parse(src); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// utf8BOM is the byte-order mark some editors start a UTF-8 file with.
var utf8BOM = []byte("\ufeff")

func (f *File) parse(src []byte) error {
	if rest, ok := bytes.CutPrefix(src, utf8BOM); ok {
		f.bom, src = true, rest
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		docs = append(docs, &doc)
	}
	f.src, f.docs = src, docs
	return nil
}

// CRDs lists the apiextensions.k8s.io/v1 CRDs in the file, Lists unwrapped.
// A document or a CRD that does not decode strictly is an error naming the
// file, the document and the line.
func (f *File) CRDs() ([]CRD, error) {
	var out []CRD
	for i, doc := range f.docs {
		objs, err := objectsOf(doc)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: document %d: %w", f.Path, doc.Line, i+1, err)
		}
		for _, d := range objs {
			if d.obj["kind"] != "CustomResourceDefinition" {
				continue
			}
			where := fmt.Sprintf("%s:%d: document %d", f.Path, doc.Line, i+1)
			if d.item >= 0 {
				where += fmt.Sprintf(", item %d", d.item+1)
			}
			if d.obj["apiVersion"] != "apiextensions.k8s.io/v1" {
				return nil, fmt.Errorf("%s is a CRD of %v; only apiextensions.k8s.io/v1 is supported", where, d.obj["apiVersion"])
			}
			crd, err := strictCRD(d)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			out = append(out, CRD{File: f, Index: i, Item: d.item, Obj: crd})
		}
	}
	return out, nil
}

// statPath is os.Stat, with a path that does not exist said as kubectl's
// -f says it.
func statPath(path string) (os.FileInfo, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the path %q does not exist", path)
	}
	return info, err
}

// Bytes is the file's current content.
func (f *File) Bytes() []byte {
	if f.bom {
		return append(bytes.Clone(utf8BOM), f.src...)
	}
	return f.src
}
