// Package lifecycle models a CRD version's lifecycle: version priority, each version's stage,
// what is wrong with a CRD's versions and what to do next. It reads CRD objects and never talks
// to a cluster, so every decision the plugin makes can be tested by a table.
package lifecycle
