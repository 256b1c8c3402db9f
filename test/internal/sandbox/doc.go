// Package sandbox runs a real Kubernetes API server for CRDs in-process: an
// embedded etcd plus k8s.io/apiextensions-apiserver, the code kube-apiserver
// itself serves CRDs with. Tests and the demo use it; the plugin never links
// it. etcd is reachable directly, so tests can check the apiVersion each
// object is stored at — the ground truth of a storage migration.
package sandbox
