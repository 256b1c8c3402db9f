// Package migrate is the plugin's engine for programs that own CRDs: the
// re-store of every object at the storage version (Migrate), the prune of
// status.storedVersions, the managedFields cleanup (CleanManagedFields) and
// one lifecycle step at a time (Promote, Rollback), with the same checks,
// refusals and dry runs as the commands.
//
// The rule of every re-store: old→new→old is proven for each object as it is
// written, on the server that takes the write. Either the CRD proves it for
// every object (conversion None and the schema comparison), or the object is
// checked by a server-side dry run at the old version and re-stored with the
// resourceVersion that check read as its precondition. A record of an earlier
// check never stands in for it.
//
// What the calls report are the types of pkg/results; an operator starts at
// Migrate (see the example).
package migrate
