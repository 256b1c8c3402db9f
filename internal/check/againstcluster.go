package check

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// Options tune AgainstCluster.
type Options struct {
	// Objects validates every live object against the new schemas.
	Objects bool
	// Policy keeps a CRD author's release rules errors (see Consequence).
	Policy   bool
	PageSize int64
	// Progress, when set, hears the objects validated of one CRD.
	Progress func(crd string, done, total int64)
	// OwnRequests are this plugin's records of its own deprecated requests: no client's.
	OwnRequests usage.OwnRecords
}

// AgainstCluster compares each new CRD with the live one: CheckUpgrade's rules with the live
// storedVersions, the new CRD as a server-side dry run (the server's refusals in its words),
// then (opts.Objects) every live object against the new schemas. A live CRD the manifests lack
// is reported where it looks renamed (renamedFrom) or its source applied them too
// (droppedBySource). Nothing is persisted.
func AgainstCluster(ctx context.Context, c cluster.Clients, crds []*apiextensionsv1.CustomResourceDefinition, opts Options) ([]results.Finding, error) {
	// Eight CRDs at a time (500 in seconds); findings keep the manifests' order.
	found := make([][]results.Finding, len(crds))
	// The metric is read once, before the first CRD's own lists, so they cannot show in it.
	metrics := sync.OnceValues(func() (*usage.DeprecatedAPIs, error) {
		if c.Discovery == nil {
			return &usage.DeprecatedAPIs{Access: usage.MetricsNotServed}, nil
		}
		return usage.DeprecatedRequests(ctx, c.Discovery.RESTClient())
	})
	live := make([]*apiextensionsv1.CustomResourceDefinition, len(crds))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, n := range crds {
		g.Go(func() error {
			var err error
			found[i], live[i], err = checkOne(gctx, c, n, opts, metrics)
			found[i] = planned(found[i], live[i], n)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// Marks on the manifests and their live CRDs tell a rename from an unrelated CRD.
	refs := slices.Clone(crds)
	for _, l := range live {
		if l != nil {
			refs = append(refs, l)
		}
	}
	// Discovery is read once, for the live CRDs the new ones may rename.
	groups := sync.OnceValues(func() (servedGroups, error) { return discoverGroups(c.Discovery) })
	var out []results.Finding
	dropped := map[string]bool{}
	for i, n := range crds {
		renamed, err := renamedFrom(ctx, c, n, crds, refs, groups)
		if err != nil {
			return nil, err
		}
		out = append(out, found[i]...)
		for _, d := range renamed {
			// A live CRD that two new ones could rename is reported once.
			if !dropped[d.CRD] {
				dropped[d.CRD] = true
				out = append(out, d)
			}
		}
	}
	left, err := droppedBySource(ctx, c, crds, live, dropped)
	if err != nil {
		return nil, err
	}
	return append(out, left...), nil
}

// checkOne compares one new CRD with the live one, which it returns (nil: none).
func checkOne(ctx context.Context, c cluster.Clients, n *apiextensionsv1.CustomResourceDefinition, opts Options, metrics func() (*usage.DeprecatedAPIs, error)) ([]results.Finding, *apiextensionsv1.CustomResourceDefinition, error) {
	live, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, n.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return nil, nil, fmt.Errorf("reading CRD %s: %w", n.Name, err)
	}
	var stored []string
	if live != nil {
		stored = live.Status.StoredVersions
		if stored == nil {
			stored = []string{}
		}
	}
	// The dry run needs a real apply's verbs: without them a 403 would read as a refusal.
	a := cluster.Access{Op: "check the upgrade of", Need: []cluster.Permission{cluster.CRDPermission("create", "", "")}}
	if live != nil {
		a.Need = []cluster.Permission{cluster.CRDPermission("update", "", n.Name)}
		if opts.Objects {
			a.ObjectVerbs = []string{"list"}
		}
	}
	if err := cluster.RequireAccess(ctx, c, n, a, nil); err != nil {
		return nil, nil, err
	}
	out := CheckUpgrade(live, n, stored)
	if live != nil {
		out = append(out, windowFindings(live)...)
	}
	server, err := dryRunApply(ctx, c.CRDs, live, n)
	if err != nil {
		return nil, nil, err
	}
	out = append(out, serverFindings(n.Name, server, out)...)
	if live == nil {
		return Consequence(out, nil, opts.Policy), live, nil
	}
	if server == nil {
		applies, err := ownerApplies(ctx, c.CRDs, live, n)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, applies...)
	}
	if why := stages.NotServed(live); why != "" {
		// Its objects cannot be listed: every check of them would be a 404.
		return Consequence(append(out, notServedFinding(live, n, why)), nil, opts.Policy), live, nil
	}
	entries, err := removedVersionEntries(ctx, c.Metadata, live, n, max(opts.PageSize, 1))
	if pass.IsConversionFailure(err) {
		out = append(out, unreadable(live, err))
		return Consequence(out, nil, opts.Policy), live, nil
	}
	if err != nil {
		return nil, nil, err
	}
	out = append(out, entries...)
	if gone := Unserved(live, n); len(gone) > 0 {
		requests, err := metrics()
		if err != nil {
			return nil, nil, err
		}
		managers, err := usage.VersionManagers(ctx, c.Metadata, live, gone, max(opts.PageSize, 1))
		if pass.IsConversionFailure(err) {
			out = append(out, unreadable(live, err))
			return Consequence(out, nil, opts.Policy), live, nil
		}
		if err != nil {
			return nil, nil, err
		}
		for _, v := range gone {
			if len(managers[v]) > 0 {
				out = append(out, managersFinding(n.Name, v, stages.StorageVersion(n), managers[v]))
			}
			if f, ok := requestsFinding(requests, live, v, stages.StorageVersion(n), opts.OwnRequests.Own(live, requests)); ok {
				out = append(out, f)
			}
		}
	}
	if !opts.Objects {
		return Consequence(out, nil, opts.Policy), live, nil
	}
	vo := validateOptions{PageSize: max(opts.PageSize, 1)}
	if opts.Progress != nil {
		vo.Progress = func(done, total int64) { opts.Progress(n.Name, done, total) }
	}
	objs, counts, err := validateObjects(ctx, c.Dynamic, live, n, vo)
	if pass.IsConversionFailure(err) {
		out = append(out, unreadable(live, err))
		return Consequence(out, nil, opts.Policy), live, nil
	}
	if err != nil {
		return nil, nil, err
	}
	validated := map[string]int64{}
	for v, count := range counts {
		validated[n.Name+"/"+v] = count
	}
	return Consequence(append(out, objs...), validated, opts.Policy), live, nil
}

// dryRunApply sends the new CRD as a dry run of an apply (the live CRD with the new spec,
// labels and annotations, or a create) and returns the API server's refusal, if any.
func dryRunApply(ctx context.Context, client apiextensionsclient.Interface, live, n *apiextensionsv1.CustomResourceDefinition) (refusal, err error) {
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	// Strict, as kubectl apply --server-side: an unknown field is refused, not dropped.
	opts := metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: cluster.FieldManager, FieldValidation: metav1.FieldValidationStrict}
	if live == nil {
		c := n.DeepCopy()
		c.ResourceVersion, c.Status = "", apiextensionsv1.CustomResourceDefinitionStatus{}
		_, err = api.Create(ctx, c, metav1.CreateOptions{DryRun: opts.DryRun, FieldManager: cluster.FieldManager, FieldValidation: metav1.FieldValidationStrict})
	} else {
		// The server's controllers write a CRD's status at any moment; such a conflict says
		// nothing of the manifest, so the update is sent again on the CRD as it is now.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			u := live.DeepCopy()
			u.Spec = *n.Spec.DeepCopy()
			for k, v := range n.Labels {
				setKey(&u.Labels, k, v)
			}
			for k, v := range n.Annotations {
				setKey(&u.Annotations, k, v)
			}
			_, err := api.Update(ctx, u, opts)
			if apierrors.IsConflict(err) {
				fresh, getErr := api.Get(ctx, n.Name, metav1.GetOptions{})
				if getErr != nil {
					return getErr
				}
				live = fresh
			}
			return err
		})
	}
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return nil, nil
	case errors.As(err, &status) && (apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err)):
		return err, nil
	}
	return nil, fmt.Errorf("sending %s to the API server as a dry run: %w", n.Name, err)
}

func setKey(m *map[string]string, k, v string) {
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[k] = v
}

// serverFindings turns the server's refusal into findings, one per cause no rule reported.
func serverFindings(crd string, refusal error, known []results.Finding) []results.Finding {
	if refusal == nil {
		return nil
	}
	covered := func(msg string) bool {
		for _, f := range known {
			if f.Kind == results.FindingRejected && strings.Contains(f.Message, msg) {
				return true
			}
		}
		return false
	}
	finding := func(field, msg string) results.Finding {
		return results.Finding{Severity: lifecycle.SeverityError, Kind: results.FindingRejected, CRD: crd, Rule: "serverDryRun", Path: field,
			Message: "the API server refuses it (server-side dry run): " + msg,
			// No plugin step changes the manifest: the author changes what the server names.
			Fix: []lifecycle.Advice{stages.Advise(stages.CheckFileStep("NEW"), "change what the API server names in the manifest (no step of the plugin can: it is the manifest's content), then check it again")}}
	}
	var out []results.Finding
	var status apierrors.APIStatus
	if errors.As(refusal, &status) && status.Status().Details != nil && len(status.Status().Details.Causes) > 0 {
		for _, c := range status.Status().Details.Causes {
			msg := c.Message
			if c.Field != "" {
				msg = c.Field + ": " + c.Message
			}
			if !covered(msg) {
				out = append(out, finding(c.Field, msg))
			}
		}
		return out
	}
	if !covered(refusal.Error()) {
		out = append(out, finding("", refusal.Error()))
	}
	return out
}

// notServedFinding is a live CRD the API server has not established: no client of it works and
// no object could be checked. Refused names the new CRD keeps: an error; changed names (the
// apply may establish it): a warning; names accepted, still being set up: a warning.
func notServedFinding(live, n *apiextensionsv1.CustomResourceDefinition, why string) results.Finding {
	f := results.Finding{Severity: lifecycle.SeverityError, Kind: results.FindingObjects, CRD: n.Name, Rule: "crdNotServed",
		Message: fmt.Sprintf("the API server serves none of the live CRD's objects (%s): every client of it fails, and its objects could not be checked; the new CRD keeps the same names", why),
		Fix:     []lifecycle.Advice{{Text: "change the names another CRD holds (plural, kind, short names) in the new CRD, then check again"}}}
	switch {
	case !stages.NamesRefused(live):
		// Being set up: no edit is needed, only time.
		f.Severity = lifecycle.SeverityWarning
		f.Message = fmt.Sprintf("the API server has not established the live CRD yet (%s): none of its objects is served, so none could be checked", why)
		f.Fix = []lifecycle.Advice{{Text: "check again once it is Established (kubectl wait --for=condition=Established crd/" + live.Name + ")"}}
	case !equality.Semantic.DeepEqual(live.Spec.Names, n.Spec.Names):
		f.Severity = lifecycle.SeverityWarning
		f.Message = fmt.Sprintf("the API server serves none of the live CRD's objects (%s), so none could be checked; the new CRD changes its names, which may let the API server establish it", why)
		f.Fix = []lifecycle.Advice{{Text: "after the apply, check that the CRD is Established (kubectl get crd " + n.Name + "), then check again"}}
	}
	return f
}
