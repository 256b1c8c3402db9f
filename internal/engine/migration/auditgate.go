package migration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/auditlog"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// readVerbs are the verbs a reader sends: a log without one of them for the
// resource may be a policy that drops reads, and would show no reader.
var readVerbs = []string{"get", "list", "watch"}

// auditClients reads the audit logs for the blocked step's gate: each user
// but this plugin that requested one of versions after the prune at since,
// by name. A log that cannot show such requests is the unnamed client
// "requests", as the metric's count is where no log is given.
func auditClients(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, versions []string, since time.Time, opts PromoteOptions) ([]results.Client, *results.AuditLogRead, error) {
	gr := schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
	log, err := auditlog.Read(ctx, opts.AuditLogs, auditlog.Options{Resources: []schema.GroupResource{gr}})
	if err != nil {
		return nil, nil, fmt.Errorf("read the audit log: %w", err)
	}
	if opts.AuditLogRead != nil {
		opts.AuditLogRead(log.Read, log.Warnings)
	}
	return auditGate(log, crd, versions, since), &log.Read, nil
}

// auditGate judges what the log read shows of versions since the prune.
func auditGate(log *auditlog.Result, crd *apiextensionsv1.CustomResourceDefinition, versions []string, since time.Time) []results.Client {
	read := log.Read
	which := strings.Join(versions, ", ")
	unseen := func(why string) []results.Client {
		return []results.Client{{Name: usage.Requests, Evidence: fmt.Sprintf("requests to %s cannot be seen: %s", which, why)}}
	}
	after := clientsAfter(since)
	switch {
	case read.To == nil:
		return unseen("the audit log holds no event")
	case !since.IsZero() && !read.To.After(after):
		return unseen(fmt.Sprintf("the audit log ends at %s, before this plugin's prune of storedVersions at %s; read one that reaches past it", stamp(*read.To), stamp(since)))
	case !logsReads(log, crd):
		return unseen(fmt.Sprintf("the audit log holds no get, list or watch of %s.%s: its policy may not log reads of it (level Metadata for them is needed), and a reader would not show", crd.Spec.Names.Plural, crd.Spec.Group))
	}
	type user struct {
		agents, verbs []string
		requests      int64
		first, last   time.Time
		versions      []string
	}
	var order []string
	users := map[string]*user{}
	for _, v := range versions {
		clients, _ := log.Clients(schema.GroupVersionResource{Group: crd.Spec.Group, Version: v, Resource: crd.Spec.Names.Plural})
		for _, c := range clients {
			// A request before the prune is history, as a write is.
			if !since.IsZero() && !c.Last.After(after) {
				continue
			}
			u := users[c.User]
			if u == nil {
				u = &user{first: c.First}
				users[c.User] = u
				order = append(order, c.User)
			}
			u.agents = appendNew(u.agents, fmt.Sprintf("%q", c.UserAgent))
			u.verbs = appendNew(u.verbs, c.Verbs...)
			u.versions = appendNew(u.versions, v)
			u.requests += c.Requests
			if c.First.Before(u.first) {
				u.first = c.First
			}
			if c.Last.After(u.last) {
				u.last = c.Last
			}
		}
	}
	out := make([]results.Client, 0, len(order))
	for _, name := range order {
		u := users[name]
		slices.Sort(u.verbs)
		who := ""
		if sa := results.ServiceAccountOf(name); sa != "" {
			who = "ServiceAccount " + sa + " "
		}
		n := fmt.Sprintf("%d requests", u.requests)
		if u.requests == 1 {
			n = "1 request"
		}
		last := stamp(u.last)
		when := n + " since this plugin's prune of storedVersions, the last at " + last
		if since.IsZero() {
			when = n + ", the last at " + last + "; no prune of storedVersions by this plugin dates the migration, so every request in the log counts"
		} else if !u.first.After(after) {
			when = n + " in the log from " + stamp(u.first) + ", the last at " + last + ", after this plugin's prune of storedVersions"
		}
		out = append(out, results.Client{Name: name, Evidence: fmt.Sprintf("%srequested %s (%s; user agent %s): %s (audit log)",
			who, strings.Join(u.versions, ", "), strings.Join(u.verbs, ", "), strings.Join(u.agents, ", "), when)})
	}
	return out
}

// logsReads: the log holds a read of the resource at any version, by
// anyone (this plugin's own list during the migration included).
func logsReads(log *auditlog.Result, crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, v := range crd.Spec.Versions {
		clients, own := log.Clients(schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural})
		for _, c := range append(clients, own...) {
			if slices.ContainsFunc(c.Verbs, func(verb string) bool { return slices.Contains(readVerbs, verb) }) {
				return true
			}
		}
	}
	return false
}

// auditWindow says what an audit log read covers, for a refusal or a notice.
func auditWindow(r results.AuditLogRead) string {
	if r.From == nil || r.To == nil {
		return fmt.Sprintf("the audit log read (%s) holds no event", strings.Join(r.Files, ", "))
	}
	return fmt.Sprintf("the audit log read (%s) covers %s to %s (%s)", strings.Join(r.Files, ", "), stamp(*r.From), stamp(*r.To), r.To.Sub(*r.From).Round(time.Second))
}

// despiteNamed: names has cl's name, or NAMESPACE/NAME for a ServiceAccount's.
func despiteNamed(names []string, cl results.Client) bool {
	sa := results.ServiceAccountOf(cl.Name)
	return slices.ContainsFunc(names, func(n string) bool { return n == cl.Name || sa != "" && n == sa })
}

func appendNew(to []string, vs ...string) []string {
	for _, v := range vs {
		if !slices.Contains(to, v) {
			to = append(to, v)
		}
	}
	return to
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
