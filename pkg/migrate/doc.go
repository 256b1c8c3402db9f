// Package migrate owns the plugin's writes to a cluster, dry runs
// included: lifecycle steps on CRDs, the re-store pass, the prune of
// status.storedVersions and the managedFields cleanup. Two writes are not
// its own: the record of a passed check, an annotation package verify
// leaves on the CRD beside its proof, and check's server-side dry runs of
// a new CRD (package check); docs/safety.md lists every write and its
// guard. Each write is guarded: optimistic concurrency on CRDs, a
// resourceVersion precondition on objects, dry-run where asked. The proofs
// it writes on (the round-trip checks, the per-object check before each
// re-store, the proof that re-storing loses nothing, the converter probe)
// are package verify's, which persists no object. It is also a library for
// operators that own CRDs: see Migrate and the example.
//
// The rule of every re-store: before an object is re-stored, old→new→old
// is proven for that object as it is written. Either the CRD proves it for
// every object (conversion None and schemas that keep every field, see
// schemacompat.SchemaProof), or the object is checked in the same pass, by a
// server-side dry run at the old version, and the re-store is written with
// the resourceVersion the check read as its precondition: a write in
// between is a conflict, and the object is checked again. A record of an
// earlier check marks a stage for status and promote; it never stands in
// for that check, because a write that entered the API server before a
// storage switch lands after any earlier check, a conversion webhook is
// redeployed behind an unchanged CRD, and an annotation is anyone's to
// write. Likewise the time of a storage switch comes from what the plugin
// itself saw (Sightings), never from a time on the CRD.
package migrate
