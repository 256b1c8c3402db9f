package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	kjson "sigs.k8s.io/json"
)

// ErrNotInPlace: the object's text is in a form the line editor does not
// change (an anchor or alias, a list not one item a line, an edit that does
// not converge); a person can.
var ErrNotInPlace = errors.New("the text cannot be edited in place")

// maxEdits bounds the edits of one rewrite: each changes one key, so a
// rewrite that has not converged by then never will.
const maxEdits = 10000

// Rewrite changes the object's text so that it reads as want, editing only
// what differs, one edit at a time and re-parsed after each: a changed
// one-line scalar in place (keeping its quoting and trailing comment), a
// key that is gone by its lines, a new key after its mapping's last line,
// and any other changed value written again as block YAML at its key's
// indentation. Everything else of the file stays byte for byte.
func (o *Object) Rewrite(want map[string]any) (err error) {
	original := o.File.src
	defer func() {
		// All or nothing: a rewrite that fails half-way leaves the file
		// as it was.
		if err != nil && !bytes.Equal(original, o.File.src) {
			_ = o.File.parse(original)
		}
	}()
	if o.File.isJSON() {
		return &JSONError{Path: o.File.Path}
	}
	target, err := normalize(want)
	if err != nil {
		return err
	}
	for range maxEdits {
		n := o.node()
		if n == nil {
			return fmt.Errorf("%s: the object is gone from the file", o.Where())
		}
		src := o.File.src
		same, err := o.File.reconcile(n, target, func() error {
			return errors.New("the document cannot be edited in place")
		})
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", o.Where(), err)
		case same:
			o.Obj = want
			return nil
		case bytes.Equal(src, o.File.src):
			return fmt.Errorf("%s: an edit changed nothing: %w", o.Where(), ErrNotInPlace)
		}
		if err := o.File.parse(o.File.src); err != nil {
			return fmt.Errorf("%s: edit left invalid YAML: %w", o.Where(), err)
		}
	}
	return fmt.Errorf("%s: more than %d edits: %w", o.Where(), maxEdits, ErrNotInPlace)
}

// node is the object's YAML node in the file as last parsed.
func (o Object) node() *yaml.Node {
	if o.Index >= len(o.File.docs) {
		return nil
	}
	n := root(o.File.docs[o.Index])
	if o.Item < 0 {
		return n
	}
	items := lookup(n, "items")
	if items == nil || items.Kind != yaml.SequenceNode || o.Item >= len(items.Content) {
		return nil
	}
	return items.Content[o.Item]
}

func (f *File) isJSON() bool {
	trimmed := bytes.TrimSpace(f.src)
	return strings.EqualFold(filepath.Ext(f.Path), ".json") || bytes.HasPrefix(trimmed, []byte("{")) || bytes.HasPrefix(trimmed, []byte("["))
}

// reconcile makes one edit towards want at or below n and reports whether
// n already reads as want. whole replaces all of n, for a change that
// cannot be made inside it.
func (f *File) reconcile(n *yaml.Node, want any, whole func() error) (bool, error) {
	same, err := reads(n, want)
	if err != nil || same {
		return same, err
	}
	m, isMap := want.(map[string]any)
	l, isList := want.([]any)
	switch {
	case n.Kind == yaml.AliasNode || n.Anchor != "":
		return false, fmt.Errorf("line %d uses a YAML anchor or alias: %w", f.lineBase+n.Line, ErrNotInPlace)
	case flow(n):
		return false, whole()
	case n.Kind == yaml.MappingNode && isMap:
		return false, f.reconcileMapping(n, m, whole)
	case n.Kind == yaml.SequenceNode && isList && len(l) == len(n.Content):
		for i, item := range n.Content {
			same, err := f.reconcile(item, l[i], func() error { return f.replaceItem(n, i, l[i]) })
			if err != nil || !same {
				return false, err
			}
		}
	case n.Kind == yaml.ScalarNode && !isMap && !isList:
		if text, ok := inline(n, want); ok && f.replaceToken(n, text) {
			return false, nil
		}
	}
	return false, whole()
}

func (f *File) reconcileMapping(n *yaml.Node, m map[string]any, whole func() error) error {
	have := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		have[k.Value] = true
		w, present := m[k.Value]
		if !present {
			// The last key gone: the mapping is written {} in its key's
			// place, as the API server keeps an empty object (no lines
			// left under the key would read as null).
			if !f.startsLine(k) || len(n.Content) == 2 {
				return whole()
			}
			return f.deleteLines(k.Line, f.blockEnd(k, k.Column-1))
		}
		same, err := reads(v, w)
		if err != nil {
			return err
		}
		if same {
			continue
		}
		replace := func() error {
			if !f.startsLine(k) {
				return whole()
			}
			return f.replaceKey(k, w)
		}
		if v.Kind == yaml.ScalarNode && v.Line == k.Line {
			if text, ok := inline(v, w); ok && f.replaceToken(v, text) {
				return nil
			}
			return replace()
		}
		_, err = f.reconcile(v, w, replace)
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if have[k] {
			continue
		}
		if len(n.Content) == 0 {
			return whole()
		}
		last := n.Content[len(n.Content)-2]
		first := n.Content[0]
		return f.insertBlock(f.blockEnd(last, last.Column-1)+1, first.Column-1, map[string]any{k: m[k]})
	}
	return nil
}

// startsLine says whether only indentation comes before node on its line:
// the first key of a "- key: value" item shares its line with the dash.
func (f *File) startsLine(n *yaml.Node) bool {
	start := f.offset(n.Line, 1)
	end := f.offset(n.Line, n.Column)
	return start >= 0 && end >= start && strings.TrimLeft(string(f.src[start:end]), " ") == ""
}

// replaceKey writes key k's value again as block YAML.
func (f *File) replaceKey(k *yaml.Node, want any) error {
	if err := f.deleteLines(k.Line, f.blockEnd(k, k.Column-1)); err != nil {
		return err
	}
	return f.insertBlock(k.Line, k.Column-1, map[string]any{k.Value: want})
}

// replaceItem writes item i of sequence seq again as block YAML.
func (f *File) replaceItem(seq *yaml.Node, i int, want any) error {
	item := seq.Content[i]
	dash := f.offset(item.Line, 1)
	if dash < 0 {
		return errors.New("cannot find the list item")
	}
	line := f.lines()[item.Line-1]
	indent := len(line) - len(strings.TrimLeft(line, " "))
	if !strings.HasPrefix(strings.TrimLeft(line, " "), "-") || flow(seq) {
		return fmt.Errorf("line %d: the list is not written one item a line: %w", f.lineBase+item.Line, ErrNotInPlace)
	}
	end := f.blockEnd(item, indent)
	if err := f.deleteLines(item.Line, end); err != nil {
		return err
	}
	return f.insertBlock(item.Line, indent, []any{want})
}

// insertBlock inserts v as block YAML at line, indented by indent spaces.
func (f *File) insertBlock(line, indent int, v any) error {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return err
	}
	text := strings.TrimSuffix(buf.String(), "\n")
	lines := strings.Split(text, "\n")
	for i := range lines {
		lines[i] = strings.Repeat(" ", indent) + lines[i]
	}
	return f.insertLine(line, strings.Join(lines, f.newline()))
}

// replaceToken puts text in place of a one-line scalar's token.
func (f *File) replaceToken(v *yaml.Node, text string) bool {
	start, end, ok := f.tokenSpan(v)
	if !ok {
		return false
	}
	f.src = append(f.src[:start:start], append([]byte(text), f.src[end:]...)...)
	return true
}

// inline renders a scalar to take the place of node's token, in the same
// quoting where it can: a version string stays as it was quoted.
func inline(node *yaml.Node, want any) (string, bool) {
	if s, ok := want.(string); ok {
		switch node.Style {
		case yaml.DoubleQuotedStyle:
			return strconv.Quote(s), !strings.ContainsAny(s, "\n")
		case yaml.SingleQuotedStyle:
			return "'" + strings.ReplaceAll(s, "'", "''") + "'", !strings.ContainsAny(s, "\n")
		}
	}
	out, err := yaml.Marshal(want)
	if err != nil {
		return "", false
	}
	text := strings.TrimSuffix(string(out), "\n")
	return text, !strings.Contains(text, "\n")
}

// reads says whether node decodes to want, both as JSON sees them.
func reads(node *yaml.Node, want any) (bool, error) {
	var have any
	if err := node.Decode(&have); err != nil {
		return false, err
	}
	norm, err := normalize(have)
	if err != nil {
		return false, err
	}
	return reflect.DeepEqual(norm, want), nil
}

// normalize passes v through JSON as the API server decodes it, so
// numbers (integers exactly), times and maps compare the way it would see
// them, and an integer is written back as one.
func normalize(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, kjson.UnmarshalCaseSensitivePreserveInts(raw, &out)
}

// newline is the file's line break.
func (f *File) newline() string {
	if bytes.Contains(f.src, []byte("\r\n")) {
		return "\r\n"
	}
	return "\n"
}
