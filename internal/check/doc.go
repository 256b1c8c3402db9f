// Package check judges an upgrade to new CRD manifests before it is applied: exit 3 exactly
// when the apply will fail or a client will break. Every rule lives here, one file a family:
//
//   - rules.go, the manifests alone (CheckUpgrade, CheckFiles): storedVersionRemoved,
//     removedVersionMayBeStored, storageSwitchMayLoseData, storageWithoutBridge,
//     storageSwitchAndUnserve, removedWhileServed, unservedWithoutDeprecation, scopeChanged,
//     crdDropped, crdRenamed, and schemacompat's SchemaChanges (fieldRemoved, ...);
//   - againstcluster.go, a live cluster (AgainstCluster): serverDryRun, crdNotServed;
//   - objects.go: objectRefused, objectInvalid, objectLosesFields, objectsNotVisible;
//   - owners.go: applyConflict; lastapplied.go: lastAppliedTooLong;
//   - managedfields.go: managedFieldsOfRemovedVersion; renamed.go: crdDroppedUnseen;
//   - clients.go: clientsOnVersion, requestedOnVersion, requestedOnlyByThisPlugin,
//     requestsNotVisible;
//   - window.go: windowOpen (a step a stopped run left open, with the command that closes it);
//   - consequence.go: which findings decide the exit code (Consequence).
package check
