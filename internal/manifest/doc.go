// Package manifest reads manifest files (CRDs, and every other object for
// convert) and edits them in place (GitOps and operator repositories): it
// applies lifecycle plans to a CRD and rewrites an object to a new form.
// Edits are made to the file's text at the positions the YAML parser
// reports, so comments, key order, quoting, indentation and every other
// document of a multi-document file stay exactly as they were.
package manifest
