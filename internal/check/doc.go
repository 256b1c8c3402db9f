// Package check judges an upgrade to new CRD manifests before it is
// applied: exit 3 exactly when the apply will fail or a client will break.
// Every rule and the finding it makes live here, one file a family:
//
//   - rules.go: the manifests alone (CheckUpgrade, CheckFiles):
//     storedVersionRemoved, removedVersionMayBeStored, storageSwitchMayLoseData,
//     the lifecycle skips (storageWithoutBridge, storageSwitchAndUnserve,
//     removedWhileServed, unservedWithoutDeprecation), scopeChanged,
//     crdDropped, crdRenamed, and each schema change between the old and the
//     new version, whose rules (fieldRemoved, requiredAdded, enumValueRemoved, ...) are
//     package schemacompat's SchemaChanges;
//   - againstcluster.go: the same against a live cluster (AgainstCluster),
//     the API server's own answer to the new CRD (serverDryRun), and a live
//     CRD it does not serve (crdNotServed);
//   - objects.go: every live object under the new schemas (objectRefused,
//     objectInvalid, objectLosesFields, objectsNotVisible);
//   - owners.go: the CRD sent as its server-side apply owners send it
//     (applyConflict); lastapplied.go: client-side apply's annotation
//     (lastAppliedTooLong);
//   - managedfields.go: objects whose managedFields name a version the
//     upgrade removes (managedFieldsOfRemovedVersion);
//   - clients.go: who still uses a version the upgrade stops serving
//     (clientsOnVersion, requestedOnVersion, requestedOnlyByThisPlugin,
//     requestsNotVisible), from package usage's readings;
//   - renamed.go: a CRD the new manifests lack, seen on the cluster
//     (crdDroppedUnseen);
//   - consequence.go: which findings decide the exit code (Consequence).
package check
