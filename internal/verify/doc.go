// Package verify holds the proofs the plugin's writes rest on: verify's
// round trips (Verify: every object read at a version, sent back there as a
// server-side dry run and compared), the per-object old→new→old check
// before each re-store (ObjectCheck), the proof that re-storing the objects
// of an old version loses nothing (ProveRestorable: the schemas, or a check
// of every object), and the proof that a conversion webhook answers
// (ProveConverter). Nothing it does persists an object: every request that
// could write one is a dry run (dryRun=All). What it writes is a passed
// check, recorded as an annotation on the CRD (and an earlier record taken
// back when a check fails): a mark for status and promote, never the proof
// before a re-store.
//
// Package migrate, which writes, calls it; it imports neither migrate nor
// report.
package verify
