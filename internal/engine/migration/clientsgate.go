package migration

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// ClientsInUse refuses a step that stops serving versions someone besides
// this plugin still uses: their next request would get 404.
type ClientsInUse struct {
	CRD      string
	Versions []string
	Clients  []results.Client
	// AuditLog is what the audit logs read covered (nil: none given).
	AuditLog *results.AuditLogRead
}

func (e *ClientsInUse) Error() string {
	parts := make([]string, len(e.Clients))
	for i, c := range e.Clients {
		parts[i] = c.Name + ": " + c.Evidence
	}
	msg := fmt.Sprintf("stop serving %s of %s: still in use by %s", strings.Join(e.Versions, ", "), e.CRD, strings.Join(parts, "; "))
	if e.AuditLog != nil {
		msg += " (" + auditWindow(*e.AuditLog) + ")"
	}
	return msg
}

// Names are the clients' names, as --despite-clients takes them.
func (e *ClientsInUse) Names() []string {
	out := make([]string, len(e.Clients))
	for i, c := range e.Clients {
		out[i] = c.Name
	}
	return out
}

// prunedAt is when this plugin last pruned status.storedVersions, from the
// CRD's managedFields; zero if never: then every write at the version counts.
func prunedAt(crd *apiextensionsv1.CustomResourceDefinition) time.Time {
	for _, mf := range crd.ManagedFields {
		if mf.Manager == cluster.FieldManager && mf.Subresource == "status" && mf.Time != nil && mf.FieldsV1 != nil &&
			strings.Contains(string(mf.FieldsV1.GetRawBytes()), `"f:storedVersions"`) {
			return mf.Time.Time
		}
	}
	return time.Time{}
}

// clientsAfter is the time a write must be after to be a client's, the prune
// at pruned: managedFields times are whole seconds, so a write in the
// prune's own second may have come after it, and counts (erring toward "in
// use"); one in the second before cannot have.
func clientsAfter(pruned time.Time) time.Time {
	if pruned.IsZero() {
		return pruned
	}
	return pruned.Truncate(time.Second).Add(-time.Nanosecond)
}

// clientsGate finds who but this plugin still uses the versions p stops
// serving; the ones opts names are returned, any other refuses the step.
func clientsGate(ctx context.Context, c cluster.Clients, crd *apiextensionsv1.CustomResourceDefinition, p *lifecycle.Plan, opts PromoteOptions) ([]results.Client, error) {
	var versions []string
	for _, v := range crd.Spec.Versions {
		if after := stages.SpecVersion(p.After, v.Name); v.Served && (after == nil || !after.Served) {
			versions = append(versions, v.Name)
		}
	}
	if len(versions) == 0 {
		return nil, nil
	}
	// The metric first: the list below is a request too. An audit log
	// names the clients the metric only counts, so it replaces the metric.
	var m *usage.DeprecatedAPIs
	if len(opts.AuditLogs) == 0 {
		var err error
		if m, err = usage.DeprecatedRequests(ctx, c.Discovery.RESTClient()); err != nil {
			return nil, err
		}
	}
	// A write at the version before the prune is history; one after it is a client.
	since := prunedAt(crd)
	managers, err := usage.FieldManagersSince(ctx, c.Metadata, crd, max(opts.PageSize, 1), clientsAfter(since))
	if err != nil {
		return nil, err
	}
	u := usage.CRDUsage{CRD: crd, Managers: managers}
	if m != nil {
		u.Requests, u.Own = m.ForCRD(crd), usage.OwnRecords{Dir: opts.OwnRequestsDir}.Own(crd, m)
	}
	var all []results.Client
	for _, v := range versions {
		for _, cl := range u.Clients(v, m) {
			if since.IsZero() && cl.Name != usage.Requests {
				cl.Evidence += "; no prune of storedVersions by this plugin dates the migration, so every write at it counts"
			}
			all = append(all, cl)
		}
	}
	var read *results.AuditLogRead
	if len(opts.AuditLogs) > 0 {
		var requested []results.Client
		if requested, read, err = auditClients(ctx, crd, versions, since, opts); err != nil {
			return nil, err
		}
		all = append(all, requested...)
	}
	var found, let []results.Client
	for _, cl := range all {
		if despiteNamed(opts.DespiteClients, cl) {
			let = append(let, cl)
		} else {
			found = append(found, cl)
		}
	}
	if len(found) > 0 {
		return let, &ClientsInUse{CRD: crd.Name, Versions: versions, Clients: found, AuditLog: read}
	}
	return let, nil
}

// ClientsInUseFor is promote's gate for a step planned on a manifest file:
// who but this plugin still uses a version the live CRD serves and p's does
// not (from opts.AuditLogs where given). Names in opts.DespiteClients are
// returned; any other is a *ClientsInUse.
func ClientsInUseFor(ctx context.Context, cs Clients, p *lifecycle.Plan, opts PromoteOptions) ([]results.Client, error) {
	c := cs.Clients
	crd, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, p.CRD, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return clientsGate(ctx, c, crd, p, opts)
}
