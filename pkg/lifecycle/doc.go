// Package lifecycle is the model of a CRD version's lifecycle: version
// priority, the stage each version is in, what is wrong with a CRD's versions
// and what to do next. It is pure: it reads CRD objects and never talks to a
// cluster, so every decision the plugin makes can be tested by a table.
package lifecycle
