// Package auditlog reads the API server's audit log and counts who requested
// each custom resource version: one pass over audit.k8s.io/v1 Events (one
// JSON object a line, as kube-apiserver's log backend writes them, in files,
// rotated folders, gzip or stdin) and over the managed clusters' exports of
// them (EKS CloudWatch, AKS diagnostics, GKE Cloud Logging), in memory that
// grows with the clients found, not with the log.
package auditlog

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// OwnUserAgent starts the user agent of this plugin's requests (the command
// line sets "kubectl-crdversion/VERSION"): those are its own, not a client's.
const OwnUserAgent = "kubectl-crdversion/"

// MaxLine is the longest line read: an event logged at level RequestResponse
// carries whole objects; a longer line is counted bad, and the read goes on.
const MaxLine = 16 << 20

// Options say what Read counts.
type Options struct {
	// Resources are the resources counted; nil counts every resource of a
	// named API group (the core group has no custom resources).
	Resources []schema.GroupResource
	// Stdin is read for the path "-".
	Stdin io.Reader
	// maxLine replaces MaxLine in tests.
	maxLine int
}

// Result is what Read found.
type Result struct {
	Read results.AuditLogRead
	// Warnings say, one line each, what was read only in part.
	Warnings []string
	uses     map[schema.GroupVersionResource]map[clientKey]*tally
}

type clientKey struct{ user, agent string }

// tally is one client's requests to one resource version.
type tally struct {
	verbs       []string
	n           int64
	first, last time.Time
}

// Read reads every path (a file, a folder of rotated files, "-" for stdin)
// once, in order. A path that is not empty and holds no audit event is an
// error (*NotAuditLogError): a log that says nothing is not "no client".
func Read(ctx context.Context, paths []string, o Options) (*Result, error) {
	r := newReader(ctx, o)
	for _, p := range paths {
		if err := r.path(p); err != nil {
			return nil, err
		}
	}
	return r.res, nil
}

// Clients are the clients that requested gvr, most requests first: others,
// and this plugin's own apart.
func (r *Result) Clients(gvr schema.GroupVersionResource) (clients, own []results.AuditClient) {
	for k, t := range r.uses[gvr] {
		c := results.AuditClient{User: k.user, ServiceAccount: results.ServiceAccountOf(k.user), UserAgent: k.agent,
			Verbs: slices.Sorted(slices.Values(t.verbs)), Requests: t.n, First: t.first, Last: t.last, Own: isOwn(k.agent)}
		if c.Own {
			own = append(own, c)
		} else {
			clients = append(clients, c)
		}
	}
	byUse := func(a, b results.AuditClient) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.Who(), b.Who()), cmp.Compare(a.UserAgent, b.UserAgent))
	}
	slices.SortFunc(clients, byUse)
	slices.SortFunc(own, byUse)
	return clients, own
}

func isOwn(agent string) bool {
	return len(agent) >= len(OwnUserAgent) && agent[:len(OwnUserAgent)] == OwnUserAgent
}

// NotAuditLogError: an input with lines in it and no audit event among them.
type NotAuditLogError struct {
	Path string
	// Lines counts its lines that are not blank.
	Lines int64
}

func (e *NotAuditLogError) Error() string {
	return fmt.Sprintf("%s is not an audit log: no audit.k8s.io/v1 Event in its %d lines (expected one Event a line, as kube-apiserver's --audit-log-path writes them, or an EKS, AKS or GKE export of them)", e.Path, e.Lines)
}
