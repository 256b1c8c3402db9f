package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
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

// WriteConvertReport prints what convert did as a document.
func WriteConvertReport(w io.Writer, f Format, r *results.ConvertResult) error {
	return writeDocument(w, f, ConvertReport{APIVersion: APIVersion, Kind: "ConvertReport", ConvertResult: *r})
}

// WriteConvert shows every custom resource found, where it is and what
// became of it (those of a kind the CRDs lack too), then the fields each
// refused object would lose.
func WriteConvert(w io.Writer, r *results.ConvertResult) error {
	t := newTable(w, "WHERE", "KIND", "NAME", "FROM", "TO", "RESULT")
	for _, o := range r.Objects {
		if err := t.Append(where(o), o.Kind, objectRef(o), o.From, o.To, outcome(o)); err != nil {
			return err
		}
	}
	for _, n := range r.NotConverted {
		if n.Reason != results.NoCRD {
			continue
		}
		if err := t.Append(whereLine(n.Where), n.Kind, ref(n.Namespace, n.Name), version(n.APIVersion), r.To, "left: "+n.Message); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	return writeConvertSummary(w, r, false)
}

// WriteConvertSummary says in a line how many objects were converted,
// lists those not converted and why, and names each refused one with what
// it would lose.
func WriteConvertSummary(w io.Writer, r *results.ConvertResult) error {
	return writeConvertSummary(w, r, true)
}

// writeConvertSummary is WriteConvertSummary; list says whether to list
// the objects not converted (WriteConvert's table has them already).
func writeConvertSummary(w io.Writer, r *results.ConvertResult, list bool) error {
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
	if n := countReason(r, results.NoCRD); n > 0 {
		parts = append(parts, fmt.Sprintf("%d of kinds with no CRD given, in groups with others (a CRD the release drops): left as they were", n))
	}
	if r.Others > 0 {
		parts = append(parts, fmt.Sprintf("%d of other groups: left as they were", r.Others))
	}
	if _, err := fmt.Fprintf(w, "%s\n", strings.Join(parts, "; ")); err != nil {
		return err
	}
	for _, k := range r.Kustomizations {
		if _, err := fmt.Fprintf(w, "%s: %s %s → %s, with the objects it selects\n", k.Where, k.Field, k.From, k.To); err != nil {
			return err
		}
	}
	if list {
		if err := writeNotConverted(w, r); err != nil {
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

// notConvertedShown is how many objects not converted are listed before
// the rest are counted.
const notConvertedShown = 20

// writeNotConverted lists the objects left as they were and why, those
// needing attention first, folded after notConvertedShown.
func writeNotConverted(w io.Writer, r *results.ConvertResult) error {
	if len(r.NotConverted) == 0 {
		return nil
	}
	rows := slices.Clone(r.NotConverted)
	slices.SortStableFunc(rows, func(a, b results.NotConverted) int {
		switch {
		case a.Reason.Attention() == b.Reason.Attention():
			return 0
		case a.Reason.Attention():
			return -1
		}
		return 1
	})
	t := newTable(w, "NOT CONVERTED", "KIND", "NAME", "WHY")
	for i, n := range rows {
		if i == notConvertedShown {
			break
		}
		why := string(n.Reason) + ": " + n.Message
		if len(n.Errors) > 0 {
			why += ": " + strings.Join(n.Errors, "; ")
		}
		if err := t.Append(whereLine(n.Where), n.Kind, ref(n.Namespace, n.Name), why); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if more := len(rows) - notConvertedShown; more > 0 {
		attention := 0
		for _, n := range rows[notConvertedShown:] {
			if n.Reason.Attention() {
				attention++
			}
		}
		_, err := fmt.Fprintf(w, "and %d more not converted (%d of them needing attention)\n", more, attention)
		return err
	}
	return nil
}

func countReason(r *results.ConvertResult, reason results.NotConvertedReason) int {
	n := 0
	for _, o := range r.NotConverted {
		if o.Reason == reason {
			n++
		}
	}
	return n
}

func whereLine(w string) string {
	at, _, _ := strings.Cut(w, ": document")
	return at
}

func ref(namespace, name string) string {
	if namespace != "" {
		return namespace + "/" + name
	}
	return name
}

// version is the version of an apiVersion, group/version or v1.
func version(apiVersion string) string {
	_, v, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return apiVersion
	}
	return v
}
