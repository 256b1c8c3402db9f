package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// WriteVerify renders a round-trip check: which round trips were checked on
// how many objects, which could not be and what stands for them, then every
// object that did not come back intact and how.
func WriteVerify(w io.Writer, f Format, crd string, r *results.VerifyResult) error {
	if f.Document() {
		return writeDocument(w, f, VerifyReport{APIVersion: APIVersion, Kind: "VerifyReport", CRD: crd, Passed: r.Passed(), VerifyResult: *r})
	}
	skipped := ""
	if r.Skipped > 0 {
		skipped = fmt.Sprintf(" (%d skipped: deleted or changed while checked)", r.Skipped)
	}
	trips := strings.Join(r.RoundTrips, ", ")
	if r.Passed() {
		if _, err := fmt.Fprintf(w, "%s: %s: %s without loss%s\n", crd, trips, objects(r.Objects), skipped); err != nil {
			return err
		}
	} else if _, err := fmt.Fprintf(w, "%s: %s: %d of %d object checks lose data or fail%s\n", crd, trips, len(r.Losses), r.Objects*int64(len(r.Versions)), skipped); err != nil {
		return err
	}
	for _, u := range r.Unchecked {
		if _, err := fmt.Fprintf(w, "  %s\n", u); err != nil {
			return err
		}
	}
	if r.NotRecorded != "" {
		if _, err := fmt.Fprintf(w, "  %s\n", r.NotRecorded); err != nil {
			return err
		}
	}
	if r.Passed() {
		return nil
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return lossTable(w, r.Losses)
}

// writeLosses lists what the proofs found lost, if anything.
func writeLosses(w io.Writer, proofs []results.Proof) error {
	var all []results.Loss
	for _, p := range proofs {
		all = append(all, p.Losses...)
	}
	if len(all) == 0 {
		return nil
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	if err := lossTable(w, all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// lossTable shows every field an object lost or changed on the round trip.
func lossTable(w io.Writer, losses []results.Loss) error {
	t := newTable(w, "OBJECT", "VERSION", "FIELD", "READ", "RETURNED")
	for _, l := range losses {
		obj := l.Name
		if l.Namespace != "" {
			obj = l.Namespace + "/" + l.Name
		}
		if l.Error != "" {
			if err := t.Append(obj, l.Version, "(error)", l.Error, ""); err != nil {
				return err
			}
			continue
		}
		for _, d := range l.Diffs {
			if err := t.Append(obj, l.Version, d.Path, cut(d.Before), cut(d.After)); err != nil {
				return err
			}
		}
	}
	return t.Render()
}

// cut keeps a table row readable; -o json carries the whole value.
func cut(s string) string {
	if r := []rune(s); len(r) > 100 {
		return string(r[:97]) + "..."
	}
	return s
}

func objects(n int64) string { return stages.Objects(n) }

// WriteSwitchCheck renders the check made right after a storage switch:
// how each round trip is known, what was lost, and the step back if one was
// taken.
func WriteSwitchCheck(w io.Writer, crd string, s *results.SwitchCheck) error {
	if s == nil {
		return nil
	}
	for _, p := range s.Proofs {
		if _, err := fmt.Fprintf(w, "%s: %s\n", crd, p.Detail); err != nil {
			return err
		}
	}
	if err := writeLosses(w, s.Proofs); err != nil {
		return err
	}
	if s.Back != nil {
		if err := WritePlan(w, s.Back.Plan, "applied: switched back"); err != nil {
			return err
		}
		if s.Back.FieldsKept != "" {
			_, err := fmt.Fprintf(w, "%s\n", FieldsKept(s.Back.FieldsKept))
			return err
		}
	}
	return nil
}

// FieldsKept says what follows when the plugin could not give the spec
// fields one of its steps took back to their owners (why).
func FieldsKept(why string) string {
	return "the CRD's spec fields are still the plugin's, so the owner's next server-side apply of it conflicts with kubectl-crdversion (" + why + "): the owner takes them with kubectl apply --server-side --force-conflicts of its manifest"
}
