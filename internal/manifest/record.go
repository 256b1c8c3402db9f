package manifest

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// A step on a file records what it changed in the file itself, under
// stages.StepsAnnotation, with each key's own lines as they were: the
// rollback -f of that step puts those lines back, and the file is
// byte for byte what it was before the step.

// keyText is a version's key as the file has it: its lines, or "" where
// the version has no such key.
func (c CRD) keyText(ch lifecycle.Change) *string {
	switch ch.Field {
	case lifecycle.FieldServed, lifecycle.FieldStorage, lifecycle.FieldDeprecated, lifecycle.FieldDeprecationWarning:
	default:
		return nil
	}
	text := ""
	if item := versionItem(c.File.docs[c.Index], ch.Version); item != nil {
		if kv, _ := keyOf(item, string(ch.Field)); kv != nil {
			text = c.File.linesText(kv.key.Line, c.File.blockEnd(kv.key, kv.key.Column-1))
		}
	}
	return &text
}

// recordedText is the text the step being taken back recorded for a
// change's key, if it recorded one.
func recordedText(p *lifecycle.Plan, ch lifecycle.Change) (string, bool) {
	if p.Restored == nil {
		return "", false
	}
	for _, rc := range p.Restored.Changes {
		if rc.Version == ch.Version && rc.Field == ch.Field && rc.Text != nil {
			return *rc.Text, true
		}
	}
	return "", false
}

// restoreKey puts a key's recorded lines back in place of its current
// ones ("" for none).
func (f *File) restoreKey(m *yaml.Node, key, text string) error {
	kv, _ := keyOf(m, key)
	if kv == nil {
		if text == "" {
			return nil
		}
		return fmt.Errorf("the key is gone from the file: the recorded text has no place to go")
	}
	return f.replaceLines(kv.key.Line, f.blockEnd(kv.key, kv.key.Column-1), text)
}

// writeRecord writes the record of the steps after p into the CRD's
// metadata.annotations: the step forward added, the step back taken off,
// the annotation (and an annotations key it brought) gone with the last.
func (c CRD) writeRecord(p *lifecycle.Plan, rec *lifecycle.StepRecord) error {
	steps := stages.Steps(c.Obj)
	var first *string
	if len(steps) > 0 {
		first = steps[0].AnnotationsText
	}
	switch {
	case rec != nil:
		if len(steps) == 0 {
			first = c.annotationsText()
		}
		steps = stages.PushStep(steps, *rec)
		steps[0].AnnotationsText = first
	case p.Restored != nil:
		steps = stages.Steps(p.After)
		if len(steps) > 0 {
			steps[0].AnnotationsText = first
		}
	default:
		return nil
	}
	if len(steps) == 0 {
		return c.dropRecord(first)
	}
	return c.setRecord(stages.EncodeSteps(steps))
}

// annotationsText is metadata.annotations as the file has it before the
// record is first written: "" where it has none, its lines where it is no
// mapping the record can be added to, nil where it is one.
func (c CRD) annotationsText() *string {
	meta := lookup(root(c.File.docs[c.Index]), "metadata")
	kv, _ := keyOf(meta, "annotations")
	text := ""
	switch {
	case kv == nil:
	case kv.next.Kind == yaml.MappingNode && len(kv.next.Content) > 0:
		return nil
	default:
		text = c.File.linesText(kv.key.Line, c.File.blockEnd(kv.key, kv.key.Column-1))
	}
	return &text
}

// setRecord sets the record's annotation to value: in place, added to the
// annotations, or with an annotations key of its own.
func (c CRD) setRecord(value string) error {
	f := c.File
	meta := lookup(root(f.docs[c.Index]), "metadata")
	if meta == nil || meta.Kind != yaml.MappingNode || len(meta.Content) == 0 {
		return fmt.Errorf("the CRD has no metadata mapping to record the step in")
	}
	unit := meta.Content[0].Column - 1
	if mk, _ := keyOf(root(f.docs[c.Index]), "metadata"); mk != nil {
		unit -= mk.key.Column - 1
	}
	entry := func(indent int) string {
		return strings.Repeat(" ", indent) + stages.StepsAnnotation + ": " + singleQuoted(value)
	}
	akv, _ := keyOf(meta, "annotations")
	switch {
	case akv == nil:
		at := f.headCommentStart(meta.Content[0].Line)
		indent := meta.Content[0].Column - 1
		return f.replaceLines(at, at-1, strings.Repeat(" ", indent)+"annotations:"+f.newline()+entry(indent+unit)+f.newline())
	case akv.next.Kind != yaml.MappingNode || len(akv.next.Content) == 0:
		indent := akv.key.Column - 1
		return f.replaceLines(akv.key.Line, f.blockEnd(akv.key, indent), strings.Repeat(" ", indent)+"annotations:"+f.newline()+entry(indent+unit)+f.newline())
	}
	annotations := akv.next
	if kv, _ := keyOf(annotations, stages.StepsAnnotation); kv != nil {
		return f.replaceLines(kv.key.Line, f.blockEnd(kv.key, kv.key.Column-1), entry(kv.key.Column-1)+f.newline())
	}
	last := annotations.Content[len(annotations.Content)-2]
	end := f.blockEnd(last, last.Column-1)
	return f.replaceLines(end+1, end, entry(annotations.Content[0].Column-1)+f.newline())
}

// dropRecord takes the record's annotation off, and the annotations key
// with it where the record brought that (text: what was there before).
func (c CRD) dropRecord(text *string) error {
	f := c.File
	meta := lookup(root(f.docs[c.Index]), "metadata")
	akv, _ := keyOf(meta, "annotations")
	if akv == nil {
		return nil
	}
	kv, _ := keyOf(akv.next, stages.StepsAnnotation)
	if kv == nil {
		return nil
	}
	if len(akv.next.Content) > 2 {
		return f.deleteLines(kv.key.Line, f.blockEnd(kv.key, kv.key.Column-1))
	}
	restore := ""
	if text != nil {
		restore = *text
	}
	return f.replaceLines(akv.key.Line, f.blockEnd(akv.key, akv.key.Column-1), restore)
}

// singleQuoted renders s as a one-line YAML single-quoted scalar. The
// record is JSON, whose escapes keep it on one line, but for NEL, which
// JSON leaves as it is and YAML counts as a line break.
func singleQuoted(s string) string {
	s = strings.ReplaceAll(s, "\u0085", `\u0085`)
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
