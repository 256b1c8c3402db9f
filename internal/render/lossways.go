package render

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// namedObjects bounds the objects a way on names; the loss table above has them all.
const namedObjects = 5

// writeLossWays says, after a migrate left objects for a loss, the ways on
// from exactly that state: keep the fields, accept the loss by name, or
// step back. Never the same migrate again: it would leave the same objects.
func writeLossWays(w io.Writer, r *results.Result) error {
	var (
		olds, objs, fields []string
		lost               int
	)
	for _, p := range r.Proofs {
		if len(p.Losses) > 0 && !slices.Contains(olds, p.Version) {
			olds = append(olds, p.Version)
		}
		for _, l := range p.Losses {
			lost++
			obj := l.Name
			if l.Namespace != "" {
				obj = l.Namespace + "/" + l.Name
			}
			if !slices.Contains(objs, obj) {
				objs = append(objs, obj)
			}
			for _, d := range l.Diffs {
				if !slices.Contains(fields, d.Path) {
					fields = append(fields, d.Path)
				}
			}
		}
	}
	if lost == 0 {
		return nil
	}
	slices.Sort(objs)
	slices.Sort(fields)
	named := strings.Join(objs[:min(len(objs), namedObjects)], ", ")
	if len(objs) > namedObjects {
		named += fmt.Sprintf(" and %d more (above)", len(objs)-namedObjects)
	}
	what := "what their round trip failed on (above)"
	if len(fields) > 0 {
		what = strings.Join(fields, ", ")
	}
	lines := []string{
		fmt.Sprintf("%s: %s left at %s: re-storing them at %s would lose %s. Ways on, each from here:",
			r.CRD, stages.Objects(int64(len(objs))), strings.Join(olds, ", "), r.Storage, what),
		fmt.Sprintf("  keep the fields: give %s, the storage version, %s in the schema of the CRD's manifest (and in what its conversion webhook carries, if it has one), apply it, then run: %s",
			r.Storage, what, Command(*stages.MigrateStep(r.CRD))),
		fmt.Sprintf("  accept the loss: %s (re-stores every object unchecked: %s lose %s)",
			Command(lifecycle.Step{Op: lifecycle.OpMigrate, CRD: r.CRD, AcceptLoss: true}), named, what),
	}
	if back := stepBack(r, olds); back != "" {
		lines = append(lines, back)
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

// stepBack is the switch back to the one old version the objects were
// left at, where that version is served (one served again only for the
// check is not storage material): they then stay as they are, unchanged.
func stepBack(r *results.Result, olds []string) string {
	if len(olds) != 1 || olds[0] == r.Storage || (r.ServedAgain != nil && slices.Contains(r.ServedAgain.Versions, olds[0])) {
		return ""
	}
	return fmt.Sprintf("  step back: %s (%s is the storage version again, once every object stored at %s is checked %s→%s→%s)",
		Command(*stages.SwitchStorageBackStep(r.CRD, r.Storage)), olds[0], r.Storage, r.Storage, olds[0], r.Storage)
}
