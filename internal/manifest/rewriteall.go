package manifest

import (
	"bytes"
	"context"
	"strings"
)

// Edit is one object of a file and what it is to read as.
type Edit struct {
	Object *Object
	Want   map[string]any
}

// RewriteAll makes every edit, each as Object.Rewrite makes it, in time
// linear in the file: each edit re-parses only the document it is in
// (re-parsing the whole file after each edit made a file of n objects
// cost n parses of it), and the file is parsed once at the end. All or
// nothing: an edit that fails, or ctx cancelled, leaves the file as it
// was.
func (f *File) RewriteAll(ctx context.Context, edits []Edit) error {
	if len(edits) == 0 {
		return nil
	}
	spans, ok := f.documentSpans()
	if !ok {
		// Directives or markers the split cannot place: the whole file,
		// re-parsed after each edit.
		return f.rewriteWhole(ctx, edits)
	}
	docs := make([]*File, len(spans))
	for _, e := range edits {
		if err := ctx.Err(); err != nil {
			return err
		}
		i := e.Object.Index
		if docs[i] == nil {
			s := spans[i]
			docs[i] = &File{Path: f.Path, src: bytes.Clone(f.src[s.start:s.end]), lineBase: s.line - 1, docBase: i}
			if err := docs[i].parse(docs[i].src); err != nil || len(docs[i].docs) != 1 {
				return f.rewriteWhole(ctx, edits)
			}
		}
		alone := Object{File: docs[i], Index: 0, Item: e.Object.Item, Obj: e.Object.Obj}
		if err := alone.Rewrite(e.Want); err != nil {
			return err
		}
	}
	var out bytes.Buffer
	last := 0
	for i, s := range spans {
		if docs[i] == nil {
			continue
		}
		out.Write(f.src[last:s.start])
		out.Write(docs[i].src)
		last = s.end
	}
	out.Write(f.src[last:])
	if err := f.parse(out.Bytes()); err != nil {
		return err
	}
	for _, e := range edits {
		e.Object.Obj = e.Want
	}
	return nil
}

// rewriteWhole makes the edits on the whole file, re-parsing it after each.
func (f *File) rewriteWhole(ctx context.Context, edits []Edit) error {
	original := f.src
	for _, e := range edits {
		err := ctx.Err()
		if err == nil {
			err = e.Object.Rewrite(e.Want)
		}
		if err != nil {
			_ = f.parse(original)
			return err
		}
	}
	return nil
}

// span is where one document of the file is: bytes start..end of src, the
// first of them on line (1-based).
type span struct{ start, end, line int }

// documentSpans splits the file at its document markers ("---" at the
// start of a line: YAML allows one nowhere else), one span for each
// document the whole parse found, or false where the split does not give
// those documents (a directive, say).
func (f *File) documentSpans() ([]span, bool) {
	var spans []span
	cur := span{line: 1}
	off := 0
	closeSpan := func(end int) {
		cur.end = end
		spans = append(spans, cur)
	}
	for n, line := range f.lines() {
		if n > 0 && isDocumentStart(line) {
			closeSpan(off)
			cur = span{start: off, line: n + 1}
		}
		if strings.HasPrefix(line, "%") {
			return nil, false
		}
		off += len(line)
	}
	closeSpan(off)
	// Segments of only comments hold no document.
	var withDoc []span
	for _, s := range spans {
		probe := &File{}
		if err := probe.parse(f.src[s.start:s.end]); err != nil || len(probe.docs) > 1 {
			return nil, false
		}
		if len(probe.docs) == 1 {
			withDoc = append(withDoc, s)
		}
	}
	return withDoc, len(withDoc) == len(f.docs)
}

func isDocumentStart(line string) bool {
	rest, ok := strings.CutPrefix(line, "---")
	return ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t' || breakAt(rest) > 0)
}
