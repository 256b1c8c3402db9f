// Package stages decides a CRD version's lifecycle: version priority, each
// version's stage, what is wrong with a CRD's versions, what to do next, the
// plan of each step and of an upgrade to a release, and the records steps
// leave on the CRD. It reads CRD objects and never talks to a cluster, so
// every decision the plugin makes can be tested by a table. Its vocabulary is
// pkg/lifecycle's.
package stages
