package results

import (
	"strings"
	"time"
)

// AuditClient is one client of one resource version in the API server's
// audit log: a user and the user agent it sent, as the log names them.
type AuditClient struct {
	// User is the authenticated user as logged.
	User string `json:"user"`
	// ServiceAccount is NAMESPACE/NAME where User is a ServiceAccount's.
	ServiceAccount string `json:"serviceAccount,omitempty"`
	UserAgent      string `json:"userAgent"`
	// Verbs are the request verbs, "verb/subresource" for a subresource.
	Verbs    []string `json:"verbs"`
	Requests int64    `json:"requests"`
	// First and Last are the stage timestamps of its first and last request.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Own: the request came from this plugin (its user agent).
	Own bool `json:"own,omitempty"`
}

// Who is the client as a person reads it: "NS/NAME (ServiceAccount)" or
// the user.
func (c AuditClient) Who() string {
	if c.ServiceAccount != "" {
		return c.ServiceAccount + " (ServiceAccount)"
	}
	return c.User
}

// ServiceAccountOf is NAMESPACE/NAME of a ServiceAccount's user name
// (system:serviceaccount:NAMESPACE:NAME); "" for any other user.
func ServiceAccountOf(user string) string {
	rest, ok := strings.CutPrefix(user, "system:serviceaccount:")
	if !ok {
		return ""
	}
	ns, name, ok := strings.Cut(rest, ":")
	if !ok || ns == "" || name == "" || strings.Contains(name, ":") {
		return ""
	}
	return ns + "/" + name
}

// AuditLogRead is what a read of audit logs covered and could not read.
type AuditLogRead struct {
	// Files are the files read, in the order read ("-" for stdin).
	Files []string `json:"files"`
	// From and To are the first and last event's timestamps: the window
	// the log covers; absent when no event was read.
	From *time.Time `json:"from,omitempty"`
	To   *time.Time `json:"to,omitempty"`
	// Events counts the audit events read, at every stage, of every
	// resource; Requests those counted: completed requests (stage
	// ResponseComplete or Panic) to the resources asked about.
	Events   int64 `json:"events"`
	Requests int64 `json:"requests"`
	// Envelopes counts events by how they were wrapped: audit (the log
	// backend's lines), eks, aks, gke.
	Envelopes map[string]int64 `json:"envelopes,omitempty"`
	// Skipped counts JSON records that are no audit event (another kind,
	// another program's log line); Bad, lines that are no JSON or longer
	// than the reader takes; Truncated, inputs whose last line is cut short.
	Skipped   int64 `json:"skipped"`
	Bad       int64 `json:"bad"`
	Truncated int64 `json:"truncated"`
}
