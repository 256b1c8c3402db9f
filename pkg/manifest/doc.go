// Package manifest reads CRD manifests from files and applies lifecycle
// plans to them in place (GitOps and operator repositories). Edits are made
// to the file's text at the positions the YAML parser reports, so comments,
// key order, quoting, indentation and every other document of a
// multi-document file stay exactly as they were.
package manifest
