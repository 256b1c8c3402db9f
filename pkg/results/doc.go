// Package results holds what the plugin's passes over a cluster report:
// what a migration, a re-store pass, a round-trip check or a proof did,
// and every object that failed. pkg/migrate and internal/verify produce them
// and pkg/report renders them; neither side needs the other.
package results
