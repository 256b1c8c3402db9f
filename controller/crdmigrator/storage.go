package crdmigrator

import apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

// storageVersion is the version the CRD stores objects at ("" in none).
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// migrationPending: status.storedVersions names a version besides storage,
// so objects may still be stored at it.
func migrationPending(crd *apiextensionsv1.CustomResourceDefinition) bool {
	storage := storageVersion(crd)
	for _, v := range crd.Status.StoredVersions {
		if v != storage {
			return true
		}
	}
	return false
}
