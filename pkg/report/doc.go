// Package report holds the documents the commands print with -o json and
// -o yaml (apiVersion crdversion.kubectl.io/v1alpha1), for programs that read
// them: decode a command's output into the matching type (sigs.k8s.io/yaml
// for YAML). The commands' tables are rendered from the same values.
package report
