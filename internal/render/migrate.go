package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// WriteMigrate renders migrations: a line per CRD with what was done and
// whether storedVersions was pruned (or why not), then every failure.
func WriteMigrate(w io.Writer, f Format, rs []*results.Result, dryRun bool) error {
	if f.Document() {
		if rs == nil {
			rs = []*results.Result{}
		}
		return writeDocument(w, f, MigrateReport{APIVersion: APIVersion, Kind: "MigrateReport", Items: rs})
	}
	for _, r := range rs {
		for _, p := range r.Proofs {
			if p.By == results.ProofUnserved && r.Listed == 0 {
				// No object: nothing at the version to lose, nothing to say.
				continue
			}
			if _, err := fmt.Fprintf(w, "%s: %s\n", r.CRD, p.Detail); err != nil {
				return err
			}
		}
		if err := writeLosses(w, r.Proofs); err != nil {
			return err
		}
		if err := writeLossWays(w, r); err != nil {
			return err
		}
		took := passTime(r)
		verb := "re-stored"
		if dryRun {
			verb = "to re-store (accepted by a server dry run)"
		}
		if err := writePass(w, r, verb, took); err != nil {
			return err
		}
		if line := defaultsLine(r, dryRun); line != "" {
			if _, err := fmt.Fprintf(w, "  %s\n", line); err != nil {
				return err
			}
		}
		if a := r.ServedAgain; a != nil {
			after := "no longer served after it, as before"
			if !a.Undone {
				after = a.UndoError + "; kubectl crdversion status " + r.CRD + " shows the step to take"
			}
			if _, err := fmt.Fprintf(w, "  %s: not served, so served again, deprecated, while each object was checked at it; %s\n", strings.Join(a.Versions, ", "), after); err != nil {
				return err
			}
			if a.FieldsKept != "" {
				if _, err := fmt.Fprintf(w, "  %s\n", FieldsKept(a.FieldsKept)); err != nil {
					return err
				}
			}
		}
		if line := apiServersLine(r); line != "" {
			if _, err := fmt.Fprintf(w, "  %s\n", line); err != nil {
				return err
			}
		}
		if s := r.Settle; s != nil {
			if ran(s) {
				if _, err := fmt.Fprintf(w, "  after the switch grace, once more: %d re-stored, %d already there, %d gone, %d changed meanwhile, %d failed%s%s\n",
					s.Rewritten, s.Unchanged, s.Gone, s.Conflicted, s.Failed, changedByWrite(s.Changed), lost(s.Lost)); err != nil {
					return err
				}
			}
			if s.Stopped != "" {
				if _, err := fmt.Fprintf(w, "  stopped: %s%s\n", s.Stopped, stopNext(s.StopReason)); err != nil {
					return err
				}
			}
		}
		if r.Stopped != "" {
			next := stopNext(r.StopReason)
			if r.ClusterMigration != nil && r.StopReason == results.StopInterrupted {
				next = "; follow it with kubectl get storageversionmigration " + r.ClusterMigration.Name
			}
			if _, err := fmt.Fprintf(w, "  stopped: %s%s\n", r.Stopped, next); err != nil {
				return err
			}
		}
		prune := fmt.Sprintf("  storedVersions: %s → %s (pruned)", strings.Join(r.StoredVersions, ","), strings.Join(r.StoredVersionsAfter, ","))
		if r.Pruned && dryRun {
			prune = fmt.Sprintf("  storedVersions: %s → %s accepted by a server dry run, not persisted", strings.Join(r.StoredVersions, ","), strings.Join(r.StoredVersionsAfter, ","))
		}
		if r.PruneReason == results.PrunedByCluster {
			prune = fmt.Sprintf("  storedVersions: %s → %s (pruned by the cluster's migrator)", strings.Join(r.StoredVersions, ","), strings.Join(r.StoredVersionsAfter, ","))
		}
		if !r.Pruned {
			prune = fmt.Sprintf("  storedVersions: %s, not pruned: %s%s", strings.Join(r.StoredVersionsAfter, ","), r.PruneSkipped, pruneNext(r.PruneReason))
		}
		if _, err := fmt.Fprintln(w, prune); err != nil {
			return err
		}
		if mf := r.ManagedFields; mf != nil {
			if _, err := fmt.Fprintf(w, "  %s\n", managedFieldsLine(mf)); err != nil {
				return err
			}
		}
	}
	var rows int
	t := newTable(w, "CRD", "OBJECT", "CODE", "REASON", "MESSAGE")
	for _, r := range rs {
		all := r.Failures
		if r.ManagedFields != nil {
			all = append(append([]results.Failure{}, all...), r.ManagedFields.Failures...)
		}
		if r.Settle != nil {
			all = append(append([]results.Failure{}, all...), r.Settle.Failures...)
		}
		for _, fl := range all {
			obj := fl.Name
			if fl.Namespace != "" {
				obj = fl.Namespace + "/" + fl.Name
			}
			rows++
			if err := t.Append(r.CRD, obj, fmt.Sprint(fl.Code), fl.Reason, fl.Message); err != nil {
				return err
			}
		}
	}
	if rows == 0 {
		return nil
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return t.Render()
}

// passTime is how long the migration took and, over the pass alone, its
// objects/s: the waits around a pass (the switch, the grace, a second pass,
// the prune) are not the pass's pace, and a rate over them would say a
// pass of a thousand objects ran at 90/s when it ran at 800.
func passTime(r *results.Result) string {
	took := r.Duration.Round(1e6).String()
	pass := r.Took
	if pass == 0 {
		pass = r.Duration
	}
	// A rate over less than a second says more about the clock than the run.
	if pass.Seconds() < 1 {
		return took
	}
	rate := fmt.Sprintf("%.0f/s", float64(r.Rewritten+r.Unchanged+r.Gone+r.Conflicted+r.Failed)/pass.Seconds())
	if r.Duration-pass < time.Second {
		return took + ", " + rate
	}
	return fmt.Sprintf("%s in all; the pass %s, %s", took, pass.Round(1e6), rate)
}

// writePass says what re-stored the objects: this plugin's pass, with its
// counts, or the cluster's migration, which counts nothing.
func writePass(w io.Writer, r *results.Result, verb, took string) error {
	if m := r.ClusterMigration; m != nil {
		_, err := fmt.Fprintf(w, "%s: the cluster's migration %s to %s: %s (%s)\n", r.CRD, m.Name, r.Storage, m.State, r.Duration.Round(time.Second))
		return err
	}
	if r.Took == 0 && r.Stopped != "" {
		return nil // no pass ran: the stop says why
	}
	if r.Stopped != "" {
		// Stopped: the objects listed are those reached, not all there are.
		_, err := fmt.Fprintf(w, "%s: stopped at %s: of the %s listed before it stopped, %d %s, %d already there, %d gone, %d changed meanwhile, %d failed%s%s%s (%s)\n",
			r.CRD, r.Storage, objects(r.Listed), r.Rewritten, verb, r.Unchanged, r.Gone, r.Conflicted, r.Failed, changedByWrite(r.Changed), lost(r.Lost), notAtOld(r.NotAtOld), took)
		return err
	}
	_, err := fmt.Fprintf(w, "%s: %s at %s: %d %s, %d already there, %d gone, %d changed meanwhile, %d failed%s%s%s (%s)\n",
		r.CRD, objects(r.Listed), r.Storage, r.Rewritten, verb, r.Unchanged, r.Gone, r.Conflicted, r.Failed, changedByWrite(r.Changed), lost(r.Lost), notAtOld(r.NotAtOld), took)
	return err
}

// ran says whether a pass touched any object: one stopped before it began
// has nothing to count.
func ran(p *results.RestoreResult) bool {
	return p.Rewritten+p.Unchanged+p.Gone+p.Conflicted+p.Failed+p.Lost+p.Changed+p.NotAtOld > 0 || p.Stopped == ""
}

func notAtOld(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d the converter will not express at the old versions (so not stored there: not written)", n)
}

func lost(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d left as they are (old→new→old loses data: above)", n)
}

// defaultsLine says what the passes wrote of the storage version's defaults:
// it moved those objects' generation, and needs no attention.
func defaultsLine(r *results.Result, dryRun bool) string {
	if len(r.DefaultsWritten) == 0 {
		return ""
	}
	parts := make([]string, len(r.DefaultsWritten))
	for i, d := range r.DefaultsWritten {
		parts[i] = fmt.Sprintf("%s=%s into %s", d.Field, d.Default, stages.Objects(d.Objects))
	}
	verb := "written"
	if dryRun {
		verb = "to write (a server dry run)"
	}
	return fmt.Sprintf("%s's defaults %s: %s; those objects' generation moved by the defaults alone, no value lost", r.Storage, verb, strings.Join(parts, ", "))
}

func changedByWrite(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d changed by the write", n)
}

func managedFieldsLine(mf *results.RestoreResult) string {
	return fmt.Sprintf("managedFields: %s cleaned of entries at unserved versions, %d had none, %d still have them", stages.Objects(mf.Rewritten), mf.Unchanged, mf.Failed)
}

// WriteManagedFields reports a managedFields cleanup on its own (promote to
// removed): the counts on w, each failed object as a warning on errOut.
func WriteManagedFields(w, errOut io.Writer, mf *results.RestoreResult) error {
	if _, err := fmt.Fprintln(w, managedFieldsLine(mf)); err != nil {
		return err
	}
	for _, f := range mf.Failures {
		obj := f.Name
		if f.Namespace != "" {
			obj = f.Namespace + "/" + f.Name
		}
		if _, err := fmt.Fprintf(errOut, "warning: %s: %s\n", obj, f.Message); err != nil {
			return err
		}
	}
	return nil
}

// FailuresFile writes every failed object as a JSON line (with the CRD's
// name, and in a fleet its cluster's), as it happens; safe for concurrent
// calls.
func FailuresFile(w io.Writer) func(cluster, crd string, f results.Failure) {
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	return func(cluster, crd string, f results.Failure) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(struct {
			Cluster string `json:"cluster,omitempty"`
			CRD     string `json:"crd"`
			results.Failure
		}{cluster, crd, f})
	}
}

// apiServersLine says what the passes could not see of the API servers,
// or left out: "" where every server told apart had switched.
func apiServersLine(r *results.Result) string {
	switch a := r.APIServers; {
	case a == nil:
		return ""
	case a.Untold:
		return "API servers: the answers did not tell them apart (plain HTTP): the switch check's reads and the switch grace stand for what each has seen"
	case a.SharedCertificate:
		return fmt.Sprintf("API servers: several answer behind one certificate (a balancer or proxy that terminates TLS), and one was behind: the pass began once %d rounds of answers in a row agreed that they serve the CRD as proven; a server no answer came from is not seen", a.AgreeingRounds)
	case a.NotSwitched > 0:
		return fmt.Sprintf("API servers: %d showed the switch to %s and took the writes; %d had not switched yet and took none", a.Switched, r.Storage, a.NotSwitched)
	}
	return ""
}

// stopNext is the way on from a stop of a pass: the library says why it
// stopped, the report what to run.
func stopNext(r results.StopReason) string {
	switch r {
	case results.StopInterrupted, results.StopUnreachable, results.StopCRDChanged, results.StopListFailed, results.StopNotProven:
		return "; run it again to go on"
	case results.StopConversionFailing:
		return "; once the webhook converts again, run it again to go on"
	case results.StopClusterFailed:
		return "; migrate without --via=cluster names each object that fails"
	}
	return ""
}

// pruneNext is the way on from a prune the guard refused.
func pruneNext(r results.PruneReason) string {
	switch r {
	case results.PruneKeptChanging, results.PruneStorageChanged, results.PruneCRDChanged, results.PruneStoredGained:
		return "; run it again"
	case results.PruneClusterMigrating:
		return "; prune again when it is done"
	case results.PruneServersDisagree:
		return "; run migrate again once they agree, or from where each API server can be reached"
	}
	return ""
}
