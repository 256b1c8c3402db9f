// Package usage finds who still uses a CRD version before it is blocked or
// removed: the API server's deprecated-API metric (/metrics, per server and
// since it started), the field managers whose last write used the version
// (managedFields, system managers left out), and this plugin's own requests
// told from others' (OwnRequests), so that its own checks do not read as a
// client. pkg/migrate reads it for the blocked step's gate, `usage` for its
// report (internal/usagereport judges and prints it).
package usage
