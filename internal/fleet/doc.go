// Package fleet runs one command's work on several clusters in turn: the
// first alone, as a canary, then the rest a bounded number at a time, and
// no cluster started once one is not done.
package fleet
