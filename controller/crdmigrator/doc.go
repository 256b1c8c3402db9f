// Package crdmigrator runs pkg/migrate inside an operator: a
// controller-runtime Runnable that, on the leader only, re-stores every
// object of the operator's CRDs at the storage version with the per-object
// proof, then prunes status.storedVersions — at start and whenever one of
// those CRDs changes — so that a later release can remove the old version
// on every cluster the operator runs on, without an admin running the
// plugin.
//
// Its module (controller/) is one of its own so that the plugin's module never requires
// controller-runtime. The few lines an operator adds are in docs/controller.md
// and the package example.
package crdmigrator
