// Package migrate owns every write the plugin makes to a cluster: lifecycle
// steps on CRDs, and (later) re-storing objects and pruning storedVersions.
// Each write is guarded: optimistic concurrency on CRDs, dry-run where asked.
package migrate
