// Package verify holds the proofs the plugin's writes rest on: Verify's round trips (each
// object read at a version, sent back as a server-side dry run, compared), the old→new→old
// check before each re-store (ObjectCheck), ProveRestorable and ProveConverter. Every
// request that could write an object is a dry run; the only write is a passed check
// recorded on the CRD: a mark for status and promote, never the proof before a re-store.
package verify
