// Package migrate owns every write the plugin makes to a cluster, dry runs
// included: lifecycle steps on CRDs, the round-trip checks and the proof
// that re-storing loses nothing, the re-store pass, the prune of
// status.storedVersions, the managedFields cleanup, and check's server-side
// dry run. Each write is guarded: optimistic concurrency on CRDs, a
// resourceVersion precondition on objects, dry-run where asked. It is also
// a library for operators that own CRDs: see Migrate and the example.
package migrate
