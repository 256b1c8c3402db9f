package manifest

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"errors"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// ErrStepsUnreadable: the file's record of steps does not parse, so a step
// would write its own over it and a rollback could not give it back.
var ErrStepsUnreadable = errors.New("does not parse as the record of steps this plugin writes")

// ErrNotOffline: the change is the author's to write in the file (a
// version's schema, the conversion settings), not an edit of this plugin.
var ErrNotOffline = errors.New("the plugin does not write it in a manifest")

// Apply writes a plan's changes into the CRD's document, in the file's
// text. Adding a version is not done in files: its schema is the author's
// to write (and bridging needs the cluster's objects).
// The step's record goes into the file with them (record.go).
func (c CRD) Apply(p *lifecycle.Plan) error {
	var rec *lifecycle.StepRecord
	if p.Record != nil {
		if !stages.StepsWellFormed(c.Obj) {
			return fmt.Errorf("%s: metadata.annotations[%s]: %w", c.File.Path, stages.StepsAnnotation, ErrStepsUnreadable)
		}
		r := *p.Record
		r.Changes = nil
		rec = &r
	}
	for _, ch := range p.Changes {
		if rec != nil {
			rec.Changes = append(rec.Changes, lifecycle.RecordedChange{Change: ch, Text: c.keyText(ch)})
		}
		if err := c.apply(ch, p); err != nil {
			return fmt.Errorf("%s: %s %s: %w", c.File.Path, ch.Version, ch.Field, err)
		}
		// Re-parse after each edit so the next one works on true positions.
		if err := c.reparse(); err != nil {
			return err
		}
	}
	if err := c.writeRecord(p, rec); err != nil {
		return fmt.Errorf("%s: recording the step: %w", c.File.Path, err)
	}
	return c.reparse()
}

func (c CRD) reparse() error {
	if err := c.File.parse(c.File.src); err != nil {
		return fmt.Errorf("%s: edit left invalid YAML: %w", c.File.Path, err)
	}
	return nil
}

func (c CRD) apply(ch lifecycle.Change, p *lifecycle.Plan) error {
	doc := c.File.docs[c.Index]
	item := versionItem(doc, ch.Version)
	switch {
	case ch.Field == lifecycle.FieldVersion && ch.To == "":
		if item == nil {
			return fmt.Errorf("version not found")
		}
		return c.File.deleteLines(c.File.headCommentStart(item.Line), c.File.blockEnd(item, item.Column-2))
	case ch.Field == lifecycle.FieldVersion:
		return fmt.Errorf("add version %s: %w", ch.Version, ErrNotOffline)
	case ch.Field == lifecycle.FieldConversion:
		return fmt.Errorf("edit spec.conversion: %w", ErrNotOffline)
	case ch.Field == lifecycle.FieldAnnotation:
		if ch.To != "" {
			return &stages.Refusal{Reason: "the bridge record needs the cluster's objects, which a manifest file does not hold", Instead: stages.PromoteToStep(p.CRD, ch.Version, lifecycle.StageBridge)}
		}
		return c.deleteAnnotation(stages.VerifiedAnnotationPrefix + ch.Version)
	case item == nil:
		return fmt.Errorf("version not found")
	}
	if text, ok := recordedText(p, ch); ok {
		return c.File.restoreKey(item, string(ch.Field), text)
	}
	switch {
	case ch.Field == lifecycle.FieldDeprecationWarning && ch.To == "", ch.Field == lifecycle.FieldDeprecated && ch.To == "false":
		// Both default to unset: dropping the key puts the file back as it
		// was before the version was deprecated.
		return c.File.deleteKey(item, string(ch.Field))
	default:
		return c.File.setKey(item, string(ch.Field), scalar(ch))
	}
}

// scalar renders a change's new value as YAML: booleans plain, strings
// double-quoted (JSON quoting is valid YAML).
func scalar(ch lifecycle.Change) string {
	if ch.Field == lifecycle.FieldDeprecationWarning {
		return strconv.Quote(ch.To)
	}
	return ch.To
}

// versionItem finds the mapping of spec.versions[name=version].
func versionItem(doc *yaml.Node, version string) *yaml.Node {
	versions := lookup(lookup(root(doc), "spec"), "versions")
	if versions == nil || versions.Kind != yaml.SequenceNode {
		return nil
	}
	for _, item := range versions.Content {
		if n := lookup(item, "name"); n != nil && n.Value == version {
			return item
		}
	}
	return nil
}

func root(doc *yaml.Node) *yaml.Node {
	if doc != nil && doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0]
	}
	return nil
}

// lookup returns the value of key in a mapping node.
func lookup(m *yaml.Node, key string) *yaml.Node {
	if k, _ := keyOf(m, key); k != nil {
		return k.next
	}
	return nil
}

type pair struct{ key, next *yaml.Node }

func keyOf(m *yaml.Node, key string) (*pair, int) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, -1
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return &pair{m.Content[i], m.Content[i+1]}, i
		}
	}
	return nil, -1
}

// setKey sets key to a single-line scalar in mapping m: in place when the
// old value is a one-line scalar (keeping a trailing comment), else by
// replacing the key's lines; a missing key is added after the version's
// flags, at the mapping's indentation.
func (f *File) setKey(m *yaml.Node, key, value string) error {
	kv, _ := keyOf(m, key)
	if kv == nil {
		after := m.Content[0]
		for _, k := range []string{"name", "served", "storage", "deprecated"} {
			if p, _ := keyOf(m, k); p != nil && p.next.Line >= after.Line {
				after = p.next
			}
		}
		line := strings.Repeat(" ", m.Content[0].Column-1) + key + ": " + value
		return f.insertLine(after.Line+1, line)
	}
	v := kv.next
	if v.Kind == yaml.ScalarNode && v.Line == kv.key.Line && v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
		start, end, ok := f.tokenSpan(v)
		if ok {
			f.src = append(f.src[:start:start], append([]byte(value), f.src[end:]...)...)
			return nil
		}
	}
	end := f.blockEnd(kv.key, kv.key.Column-1)
	if err := f.deleteLines(kv.key.Line, end); err != nil {
		return err
	}
	return f.insertLine(kv.key.Line, strings.Repeat(" ", kv.key.Column-1)+key+": "+value)
}

func (f *File) deleteKey(m *yaml.Node, key string) error {
	kv, _ := keyOf(m, key)
	if kv == nil {
		return nil
	}
	return f.deleteLines(kv.key.Line, f.blockEnd(kv.key, kv.key.Column-1))
}

func (c CRD) deleteAnnotation(key string) error {
	doc := c.File.docs[c.Index]
	annotations := lookup(lookup(root(doc), "metadata"), "annotations")
	return c.File.deleteKey(annotations, key)
}

// tokenSpan finds the bytes of a one-line plain or quoted scalar.
func (f *File) tokenSpan(v *yaml.Node) (int, int, bool) {
	start := f.offset(v.Line, v.Column)
	if start < 0 {
		return 0, 0, false
	}
	line := f.src[start : start+lineEnd(string(f.src[start:]))]
	switch v.Style {
	case yaml.DoubleQuotedStyle:
		for i := 1; i < len(line); i++ {
			if line[i] == '\\' {
				i++
			} else if line[i] == '"' {
				return start, start + i + 1, true
			}
		}
		return 0, 0, false
	case yaml.SingleQuotedStyle:
		for i := 1; i < len(line); i++ {
			if line[i] == '\'' {
				if i+1 < len(line) && line[i+1] == '\'' {
					i++
					continue
				}
				return start, start + i + 1, true
			}
		}
		return 0, 0, false
	case 0:
		end := len(line)
		if i := bytes.Index(line, []byte(" #")); i >= 0 {
			end = i
		}
		return start, start + len(bytes.TrimRight(line[:end], " \t\r")), true
	}
	return 0, 0, false
}
