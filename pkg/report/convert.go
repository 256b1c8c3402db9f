package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// ConvertedFile is one file of convert's input as it now reads: its text,
// and the objects in it.
type ConvertedFile struct {
	Text    []byte
	Objects []map[string]any
}

// WriteConverted prints the converted input: as YAML, every file's text as
// it now reads, one after the other; as JSON, its objects (one object, or a
// v1 List of several), as kubectl convert prints them.
func WriteConverted(w io.Writer, f Format, files []ConvertedFile) error {
	if f == FormatJSON {
		var items []map[string]any
		for _, file := range files {
			items = append(items, file.Objects...)
		}
		var doc any = map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
		if len(items) == 1 {
			doc = items[0]
		}
		raw, err := json.MarshalIndent(doc, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", raw)
		return err
	}
	for i, file := range files {
		src := file.Text
		if i > 0 && !bytes.HasPrefix(src, []byte("---")) {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(src); err != nil {
			return err
		}
		if len(src) > 0 && !bytes.HasSuffix(src, []byte("\n")) {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteConvert shows every custom resource found, where it is and what
// became of it, then the fields each refused object would lose.
func WriteConvert(w io.Writer, r *results.ConvertResult) error {
	t := newTable(w, "WHERE", "KIND", "NAME", "FROM", "TO", "RESULT")
	for _, o := range r.Objects {
		if err := t.Append(where(o), o.Kind, objectRef(o), o.From, o.To, outcome(o)); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	return WriteConvertSummary(w, r)
}

// WriteConvertSummary says in a line how many objects were converted, and
// names each refused one with what it would lose.
func WriteConvertSummary(w io.Writer, r *results.ConvertResult) error {
	var parts []string
	for _, c := range []struct {
		o    results.Outcome
		what string
	}{
		{results.Converted, "converted to " + r.To},
		{results.AtVersion, "already at " + r.To},
		{results.Refused, refusedWhy(r)},
		{results.Rejected, "would be rejected at " + r.To + " (its schema's validation): left as they were"},
		{results.NoSuchVersion, "of CRDs with no version " + r.To},
		{results.NotServed, "of CRDs that do not serve " + r.To},
	} {
		if n := r.Count(c.o); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, c.what))
		}
	}
	if _, err := fmt.Fprintf(w, "%s\n", strings.Join(parts, "; ")); err != nil {
		return err
	}
	for _, k := range r.Kustomizations {
		if _, err := fmt.Fprintf(w, "%s: %s %s → %s, with the objects it selects\n", k.Where, k.Field, k.From, k.To); err != nil {
			return err
		}
	}

	var lost []results.ConvertedObject
	for _, o := range r.Objects {
		if len(o.Lost) > 0 {
			lost = append(lost, o)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	t := newTable(w, "WHERE", "NAME", "FIELD", "VALUE", "AT "+strings.ToUpper(r.To))
	for _, o := range lost {
		for _, d := range o.Lost {
			if err := t.Append(where(o), objectRef(o), d.Path, cut(d.Before), cut(d.After)); err != nil {
				return err
			}
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if len(refusedBy(r, false)) > 0 {
		_, err := fmt.Fprintf(w, "the refused objects are left as they were; --accept-loss converts them without those fields\n")
		return err
	}
	return nil
}

func where(o results.ConvertedObject) string {
	at, _, _ := strings.Cut(o.Where, ": document")
	return at
}

func objectRef(o results.ConvertedObject) string {
	if o.Namespace != "" {
		return o.Namespace + "/" + o.Name
	}
	return o.Name
}

func outcome(o results.ConvertedObject) string {
	switch {
	case o.Outcome == results.Converted && len(o.Lost) > 0:
		return fmt.Sprintf("converted, %d field(s) dropped", len(o.Lost))
	case o.Outcome == results.Rejected:
		return "rejected at " + o.To + ": " + o.Reason
	case o.Outcome == results.Refused && o.Reason != "":
		return "refused: " + o.Reason
	case o.Outcome == results.Refused:
		return fmt.Sprintf("refused: would lose %d field(s)", len(o.Lost))
	case o.Outcome == results.NoSuchVersion:
		return "left: its CRD has no " + o.To
	case o.Outcome == results.NotServed:
		return "left: its CRD does not serve " + o.To
	}
	return string(o.Outcome)
}

// refusedBy lists the refused objects refused for a reason of their own
// (reason true: a kustomization, the converter) or for what they would
// lose.
func refusedBy(r *results.ConvertResult, reason bool) []results.ConvertedObject {
	var out []results.ConvertedObject
	for _, o := range r.Objects {
		if o.Outcome == results.Refused && (o.Reason != "") == reason {
			out = append(out, o)
		}
	}
	return out
}

// refusedWhy words the count of refused objects: each says why in its row.
func refusedWhy(r *results.ConvertResult) string {
	if len(refusedBy(r, true)) == 0 {
		return "refused: they would lose fields"
	}
	return "refused"
}
