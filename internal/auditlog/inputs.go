package auditlog

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"github.com/valyala/fastjson"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// logNames are the file names read in a folder: kube-apiserver's audit.log
// and its rotated audit-2026-11-28T10-00-00.000.log, compressed or not, and
// the exports a user saves. Anything else there is not read.
var logNames = []string{".log", ".json", ".jsonl", ".ndjson"}

func isLogName(name string) bool {
	name = strings.TrimSuffix(name, ".gz")
	return slices.ContainsFunc(logNames, func(ext string) bool { return strings.HasSuffix(name, ext) })
}

// reader is one Read: the totals, and the input being read.
type reader struct {
	ctx     context.Context
	stdin   io.Reader
	only    map[schema.GroupResource]bool
	maxLine int
	res     *Result
	// cur is the input being read.
	cur *input
	// parser reads log backend lines, its memory reused from one to the next.
	parser fastjson.Parser
}

// input is one file's (or stdin's) counts.
type input struct {
	name                 string
	lines, events, bad   int64
	firstBad             int64
	truncated, cutStream bool
}

func newReader(ctx context.Context, o Options) *reader {
	r := &reader{ctx: ctx, stdin: o.Stdin, maxLine: cmp0(o.maxLine, MaxLine),
		res: &Result{uses: map[schema.GroupVersionResource]map[clientKey]*tally{}}}
	r.res.Read.Files = []string{}
	r.res.Read.Envelopes = map[string]int64{}
	if o.Resources != nil {
		r.only = map[schema.GroupResource]bool{}
		for _, gr := range o.Resources {
			r.only[gr] = true
		}
	}
	return r
}

func cmp0(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// path reads a file, every log file of a folder, or stdin.
func (r *reader) path(p string) error {
	if p == "-" {
		if r.stdin == nil {
			return errors.New("-: no standard input to read")
		}
		in, err := r.read("-", r.stdin)
		if err != nil {
			return err
		}
		return r.oneInput(in)
	}
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		in, err := r.file(p)
		if err != nil {
			return err
		}
		return r.oneInput(in)
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return err
	}
	var read []*input
	for _, e := range entries {
		name := filepath.Join(p, e.Name())
		if strings.HasPrefix(e.Name(), ".") || !isLogName(e.Name()) {
			continue
		}
		if st, err := os.Stat(name); err != nil || !st.Mode().IsRegular() {
			continue
		}
		in, err := r.file(name)
		if err != nil {
			return err
		}
		read = append(read, in)
	}
	if len(read) == 0 {
		return fmt.Errorf("%s holds no audit log: no file named *.log, *.json, *.jsonl or *.ndjson (optionally .gz) in it", p)
	}
	var lines, events int64
	for _, in := range read {
		lines += in.lines
		events += in.events
		// In a folder a stray log of another kind is left out, said aloud.
		if in.events == 0 && in.lines > 0 {
			r.warn("%s: no audit event in its %d lines: not an audit log, left out", in.name, in.lines)
		}
	}
	if events == 0 && lines > 0 {
		return &NotAuditLogError{Path: p, Lines: lines}
	}
	return nil
}

// oneInput judges a file or stdin named on its own.
func (r *reader) oneInput(in *input) error {
	switch {
	case in.events == 0 && in.lines > 0:
		return &NotAuditLogError{Path: in.name, Lines: in.lines}
	case in.lines == 0:
		r.warn("%s is empty: no event read", in.name)
	}
	return nil
}

func (r *reader) file(name string) (*input, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return r.read(name, f)
}

// read reads one input, gzip'd or not (told by its first bytes, not its
// name), line by line, or as JSON documents where one spans lines.
func (r *reader) read(name string, src io.Reader) (*input, error) {
	in := &input{name: name}
	r.cur = in
	r.res.Read.Files = append(r.res.Read.Files, name)
	br := bufio.NewReaderSize(src, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	if err := r.lines(br); err != nil {
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		in.cutStream = true
	}
	r.settle(in)
	return in, nil
}

// settle turns what was read in part into warnings and totals.
func (r *reader) settle(in *input) {
	if in.bad > 0 {
		r.res.Read.Bad += in.bad
		r.warn("%s: %d lines not read (no JSON, or longer than %s), the first at line %d", in.name, in.bad, sizeWord(r.maxLine), in.firstBad)
	}
	switch {
	case in.cutStream:
		r.res.Read.Truncated++
		r.warn("%s: the compressed stream ends early (a file still being written, or cut): read up to line %d", in.name, in.lines)
	case in.truncated:
		r.res.Read.Truncated++
		r.warn("%s: its last line is cut short (no newline, not whole JSON): not counted", in.name)
	}
}

func (r *reader) warn(format string, args ...any) {
	r.res.Warnings = append(r.res.Warnings, fmt.Sprintf(format, args...))
}

// seen widens the window the log covers.
func (r *reader) seen(t time.Time) {
	w := &r.res.Read
	if w.From == nil || t.Before(*w.From) {
		w.From = &t
	}
	if w.To == nil || t.After(*w.To) {
		t := t
		w.To = &t
	}
}

func sizeWord(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
