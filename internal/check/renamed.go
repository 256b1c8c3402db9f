package check

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// servedGroups maps "Kind/plural" to the groups serving it, from discovery: one request,
// needing no list on CRDs, which check does not otherwise ask for.
type servedGroups map[string][]string

func discoverGroups(d discovery.DiscoveryInterface) (servedGroups, error) {
	if d == nil {
		return nil, nil
	}
	_, lists, err := d.ServerGroupsAndResources()
	// An aggregated API that does not answer leaves the others: go on with what was found.
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("reading the API groups (discovery): %w", err)
	}
	out := servedGroups{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource
			}
			k := r.Kind + "/" + r.Name
			if !slices.Contains(out[k], gv.Group) {
				out[k] = append(out[k], gv.Group)
			}
		}
	}
	return out, nil
}

// renamedFrom finds the live CRDs n looks like the rename of: the same kind and plural under
// another group, absent from crds. A pruning apply deletes each with all its objects, none of
// which moves to n's group. One whose marks tell another source applied it is left out (refs:
// the new manifests and their live CRDs, whose marks are compared).
func renamedFrom(ctx context.Context, c cluster.Clients, n *apiextensionsv1.CustomResourceDefinition, crds, refs []*apiextensionsv1.CustomResourceDefinition, groups func() (servedGroups, error)) ([]results.Finding, error) {
	served, err := groups()
	if err != nil || served == nil {
		return nil, err
	}
	var out []results.Finding
	for _, g := range served[n.Spec.Names.Kind+"/"+n.Spec.Names.Plural] {
		name := n.Spec.Names.Plural + "." + g
		if g == n.Spec.Group || inManifests(name, crds) {
			continue
		}
		live, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue // a built-in or aggregated API, not a CRD
		case err != nil:
			return nil, fmt.Errorf("reading CRD %s: %w", name, err)
		}
		same, unrelated := SameSource(live, refs)
		if unrelated {
			continue
		}
		f, err := droppedFinding(ctx, c.Metadata, live, n, same)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// DroppedByRelease is what check says of the live CRDs a release lacks (crdDropped), for a plan
// toward it: live are the release's CRDs as the cluster has them (nil: not there).
func DroppedByRelease(ctx context.Context, c cluster.Clients, release, live []*apiextensionsv1.CustomResourceDefinition) ([]results.Finding, error) {
	return droppedBySource(ctx, c, release, live, nil)
}

// droppedBySource finds live CRDs the manifests lack that their source (a Helm release, Argo
// CD application, Flux Kustomization) applied too, or of a group the manifests ship: an owner
// that prunes deletes each with its objects. A CRD of another group whose source nothing
// tells, or whose marks tell another source, is not reported (CRDs come from many sources).
// It needs list on CRDs (refused: a note). reported are those already reported as renamed.
func droppedBySource(ctx context.Context, c cluster.Clients, crds, live []*apiextensionsv1.CustomResourceDefinition, reported map[string]bool) ([]results.Finding, error) {
	var applied []*apiextensionsv1.CustomResourceDefinition
	for _, l := range live {
		if l != nil {
			applied = append(applied, l)
		}
	}
	groups := map[string]bool{}
	for _, n := range crds {
		groups[n.Spec.Group] = true
	}
	// Metadata only: the marks are labels and annotations, the group is in the name, and 500
	// CRDs' schemas are tens of megabytes. Only a CRD that is reported is read whole.
	list, err := c.Metadata.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsForbidden(err) && len(applied) == 0:
		return nil, nil // a first install: nothing of this release is there to be replaced
	case apierrors.IsForbidden(err):
		return []results.Finding{{Severity: lifecycle.SeverityNote, Kind: results.FindingDropped, Rule: "crdDroppedUnseen",
			Message: "the CRDs on the cluster could not be listed (forbidden): a CRD that what applied these manifests applied too, and that they now lack, is not seen here",
			Fix:     []lifecycle.Advice{{Text: "a comparison with the manifests they replace shows it", Step: stages.CheckAgainstStep("NEW_MANIFESTS", "OLD_MANIFESTS")}}}}, nil
	case err != nil:
		return nil, fmt.Errorf("listing CustomResourceDefinitions: %w", err)
	}
	var out []results.Finding
	for i := range list.Items {
		m := &list.Items[i]
		if reported[m.Name] || inManifests(m.Name, crds) {
			continue
		}
		same, unrelated := SameSource(&apiextensionsv1.CustomResourceDefinition{ObjectMeta: m.ObjectMeta}, applied)
		// The name is plural.group (the API server requires it).
		_, group, _ := strings.Cut(m.Name, ".")
		sameGroup := groups[group] && !unrelated
		if same == "" && !sameGroup {
			continue
		}
		l, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, m.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue // deleted since the list
		case err != nil:
			return nil, fmt.Errorf("reading CRD %s: %w", m.Name, err)
		}
		shown, err := countObjects(ctx, c.Metadata, l)
		if err != nil {
			return nil, err
		}
		shown.SameSource, shown.SameGroup = same, sameGroup
		out = append(out, Dropped(l, nil, &shown))
	}
	return out, nil
}

// droppedFinding is the finding for live, a CRD the manifests lack (renamed to, if not nil).
func droppedFinding(ctx context.Context, md metadata.Interface, live, to *apiextensionsv1.CustomResourceDefinition, same string) (results.Finding, error) {
	shown, err := countObjects(ctx, md, live)
	if err != nil {
		return results.Finding{}, err
	}
	shown.SameSource = same
	return Dropped(live, to, &shown), nil
}

// objectsShown is how many objects a dropped CRD's finding names: the list that counts them
// asks for no more.
const objectsShown = 3

func inManifests(name string, crds []*apiextensionsv1.CustomResourceDefinition) bool {
	return slices.ContainsFunc(crds, func(c *apiextensionsv1.CustomResourceDefinition) bool { return c.Name == name })
}

// countObjects counts a CRD's objects cheaply (a metadata list of a few, whose names it keeps,
// and its remainingItemCount); a list the server refuses leaves them uncounted, with why.
func countObjects(ctx context.Context, md metadata.Interface, crd *apiextensionsv1.CustomResourceDefinition) (DroppedLive, error) {
	// The storage version where served (no conversion), never a deprecated one where another
	// is served: the read is no request the deprecated-API metric counts.
	version := stages.ListVersion(crd)
	if version == "" {
		return DroppedLive{Why: "it serves no version"}, nil
	}
	if md == nil {
		return DroppedLive{Why: "no client to list them"}, nil
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
	list, err := md.Resource(gvr).List(ctx, metav1.ListOptions{Limit: objectsShown})
	var status apierrors.APIStatus
	switch {
	case err != nil && errors.As(err, &status):
		return DroppedLive{Why: status.Status().Message}, nil
	case err != nil:
		return DroppedLive{}, fmt.Errorf("counting the objects of %s: %w", crd.Name, err)
	}
	got := DroppedLive{Counted: true, Count: int64(len(list.Items))}
	for _, o := range list.Items {
		name := o.Name
		if o.Namespace != "" {
			name = o.Namespace + "/" + o.Name
		}
		got.Objects = append(got.Objects, name)
	}
	switch {
	case list.GetRemainingItemCount() != nil:
		got.Count += *list.GetRemainingItemCount()
	case list.GetContinue() != "":
		got.AtLeast = true
	}
	return got, nil
}
