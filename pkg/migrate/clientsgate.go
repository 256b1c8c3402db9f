package migrate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// ClientsInUse refuses the step that stops serving versions while someone
// besides this plugin still uses them: their next request would get 404.
type ClientsInUse struct {
	CRD      string
	Versions []string
	Clients  []results.Client
}

func (e *ClientsInUse) Error() string {
	parts := make([]string, len(e.Clients))
	for i, c := range e.Clients {
		parts[i] = c.Name + ": " + c.Evidence
	}
	return fmt.Sprintf("stop serving %s of %s: still in use by %s", strings.Join(e.Versions, ", "), e.CRD, strings.Join(parts, "; "))
}

// Names are the clients' names, as --despite-clients takes them.
func (e *ClientsInUse) Names() []string {
	out := make([]string, len(e.Clients))
	for i, c := range e.Clients {
		out[i] = c.Name
	}
	return out
}

// prunedAt is when this plugin last wrote status.storedVersions (the
// prune after a migration), from the CRD's managedFields; zero where it
// never did (pruned by hand, or by the cluster's migrator): then every
// write at the version counts.
func prunedAt(crd *apiextensionsv1.CustomResourceDefinition) time.Time {
	for _, mf := range crd.ManagedFields {
		if mf.Manager == cluster.FieldManager && mf.Subresource == "status" && mf.Time != nil && mf.FieldsV1 != nil &&
			strings.Contains(string(mf.FieldsV1.GetRawBytes()), `"f:storedVersions"`) {
			return mf.Time.Time
		}
	}
	return time.Time{}
}

// clientsGate finds who but this plugin still uses the versions plan stops
// serving: the objects' field managers (one metadata list) and the API
// server's deprecated-API metric. Those despite names are let through and
// returned; any other is a refusal.
func clientsGate(ctx context.Context, c cluster.Clients, crd *apiextensionsv1.CustomResourceDefinition, p *lifecycle.Plan, opts PromoteOptions) ([]results.Client, error) {
	var versions []string
	for _, v := range crd.Spec.Versions {
		if after := lifecycle.SpecVersion(p.After, v.Name); v.Served && (after == nil || !after.Served) {
			versions = append(versions, v.Name)
		}
	}
	if len(versions) == 0 {
		return nil, nil
	}
	// The metric first: the list below is a request too (at a version not
	// deprecated, which the metric does not count).
	m, err := usage.DeprecatedRequests(ctx, c.Discovery.RESTClient())
	if err != nil {
		return nil, err
	}
	// A write at the version before the migration re-stored and pruned it
	// is history; one after it is a client still at it. The prune's second
	// is taken as before it: managedFields times have no finer grain.
	since := prunedAt(crd)
	managers, err := usage.FieldManagersSince(ctx, c.Metadata, crd, max(opts.PageSize, 1), since)
	if err != nil {
		return nil, err
	}
	u := usage.CRDUsage{CRD: crd, Requests: m.ForCRD(crd), Own: usage.OwnRecords{Dir: opts.OwnRequestsDir}.Own(crd, m), Managers: managers}
	var found, let []results.Client
	for _, v := range versions {
		for _, cl := range u.Clients(v, m) {
			if since.IsZero() && cl.Name != usage.Requests {
				cl.Evidence += "; no prune of storedVersions by this plugin dates the migration, so every write at it counts"
			}
			if slices.Contains(opts.DespiteClients, cl.Name) {
				let = append(let, cl)
			} else {
				found = append(found, cl)
			}
		}
	}
	if len(found) > 0 {
		return let, &ClientsInUse{CRD: crd.Name, Versions: versions, Clients: found}
	}
	return let, nil
}

// ClientsInUseFor is promote's gate for a step planned on a manifest file
// (blocked, removed): who but this plugin still uses, on the cluster c
// reaches, a version the live CRD serves and p's CRD does not. A cluster
// without the CRD has no client of it. Those opts.DespiteClients names are
// let through and returned; any other is a *ClientsInUse.
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
