package manifest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Editable says why the CRD's document cannot be edited in place as a
// YAML text, or nil. Edits are made line by line at the parser's positions,
// which holds for block-style YAML with LF line endings; anything else is
// refused before the file is touched, rather than half-edited.
func (c CRD) Editable() error {
	src := c.File.src
	trimmed := bytes.TrimSpace(src)
	switch {
	case c.Item >= 0:
		return &NotEditableError{Path: c.File.Path, Form: InAList, Why: fmt.Sprintf("holds %s in a List (document %d, item %d): a CRD is edited in place only as a document of its own", c.Obj.Name, c.Index+1, c.Item+1)}
	case strings.EqualFold(filepath.Ext(c.File.Path), ".json") || bytes.HasPrefix(trimmed, []byte("{")) || bytes.HasPrefix(trimmed, []byte("[")):
		return &JSONError{Path: c.File.Path}
	case bytes.Contains(src, []byte("\r\n")):
		return &NotEditableError{Path: c.File.Path, Form: CRLF, Why: "has CRLF line endings: only LF files are edited in place"}
	}
	doc := root(c.File.docs[c.Index])
	nodes := map[string]*yaml.Node{
		"the document":         doc,
		"metadata":             lookup(doc, "metadata"),
		"metadata.annotations": lookup(lookup(doc, "metadata"), "annotations"),
		"spec":                 lookup(doc, "spec"),
		"spec.versions":        lookup(lookup(doc, "spec"), "versions"),
	}
	if versions := nodes["spec.versions"]; versions != nil {
		for i, item := range versions.Content {
			nodes[fmt.Sprintf("spec.versions[%d]", i)] = item
		}
	}
	for _, where := range []string{"the document", "metadata", "metadata.annotations", "spec", "spec.versions"} {
		if flow(nodes[where]) {
			return flowError(c.File.Path, where, nodes[where])
		}
	}
	for where, n := range nodes {
		if strings.HasPrefix(where, "spec.versions[") && flow(n) {
			return flowError(c.File.Path, where, n)
		}
	}
	return nil
}

func flow(n *yaml.Node) bool { return n != nil && n.Style&yaml.FlowStyle != 0 }

func flowError(path, where string, n *yaml.Node) error {
	return &NotEditableError{Path: path, Line: n.Line, Form: FlowStyle, Why: where + " is written in flow style ({...} or [...]): only block-style YAML is edited in place"}
}

// NotEditableError refuses a CRD's text the in-place editor cannot edit
// line by line. Form says which, so that the command line can say how to
// rewrite the file.
type NotEditableError struct {
	Path string
	Line int // 0: the file as a whole
	Form TextForm
	Why  string
}

func (e *NotEditableError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Why)
	}
	return e.Path + " " + e.Why
}

// TextForm is a form of YAML text the in-place editor does not edit.
type TextForm int

const (
	InAList TextForm = iota + 1
	CRLF
	FlowStyle
)

// JSONError refuses a JSON manifest. It says only what happened; it is a
// type of its own so that the command line, which knows the tools at hand,
// can add how to convert it.
type JSONError struct{ Path string }

func (e *JSONError) Error() string {
	return fmt.Sprintf("%s is JSON: only YAML is edited in place", e.Path)
}
