// Package cluster reads what the plugin needs from a live cluster: the CRDs,
// which CRD a name given on the command line means, and how many objects a
// CRD has. It never writes.
package cluster
