// Package render renders what the plugin found or did: tables for people,
// stable JSON and YAML documents for scripts. Every byte the plugin writes to
// stdout about a result goes through here.
package render
