// Package migration is the engine behind the plugin's writes to a cluster, dry
// runs included: lifecycle steps on CRDs (Promote, Rollback), the re-store of
// every object at the storage version (Migrate), the prune of
// status.storedVersions and the managedFields cleanup. Each write is guarded:
// optimistic concurrency on CRDs, a resourceVersion precondition on objects,
// dry run where asked.
//
// The rule of every re-store: old→new→old is proven for each object as it is
// written, on the server that takes the write. Either the CRD proves it for
// every object (conversion None and the schema comparison), or the object is
// checked by a server-side dry run at the old version and re-stored with the
// resourceVersion that check read as its precondition. A record of an earlier
// check never stands in for it.
//
// The commands call it directly; importers reach it through pkg/migrate.
package migration
