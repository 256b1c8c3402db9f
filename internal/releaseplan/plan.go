// Package releaseplan plans the way from a cluster to a release's CRDs: each CRD read anew, what
// its objects' managedFields still name, how its owner applies it. status --release, check and
// upgrade print the same plan, so their next steps agree.
package releaseplan

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/usage"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// Planned is one CRD of the release (Release), as the cluster has it (Live nil: not there yet), and the
// way to the release's.
type Planned struct {
	Live, Release *apiextensionsv1.CustomResourceDefinition
	lifecycle.Upgrade
}

// Plan plans every CRD of release; manifest names the file a CRD was read from, for the steps
// that take its schema and the apply.
func Plan(ctx context.Context, c cluster.Clients, release []*apiextensionsv1.CustomResourceDefinition, manifest func(name string) string, pageSize int64) ([]Planned, error) {
	out := make([]Planned, 0, len(release))
	for _, next := range release {
		live, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, next.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return nil, fmt.Errorf("reading CRD %s: %w", next.Name, err)
		}
		p, err := One(ctx, c, live, next, manifest(next.Name), pageSize)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// One plans the way from live to next.
func One(ctx context.Context, c cluster.Clients, live, next *apiextensionsv1.CustomResourceDefinition, manifest string, pageSize int64) (Planned, error) {
	facts := stages.UpgradeFacts{Apply: stages.HowApplied(live, manifest)}
	if live != nil {
		var err error
		if facts.Entries, err = removedEntries(ctx, c, live, next, pageSize); err != nil {
			return Planned{}, err
		}
	}
	u := stages.PlanUpgrade(live, next, facts)
	for i, w := range u.Steps {
		if w.Step != nil && w.Step.FromFile == "NEW_MANIFEST" {
			s := *w.Step
			s.FromFile = manifest
			u.Steps[i].Step = &s
		}
	}
	return Planned{Live: live, Release: next, Upgrade: u}, nil
}

// removedEntries lists the versions next lacks that the objects' managedFields still name: once
// such a version is gone, every server-side apply of the object fails (kubernetes#111937).
func removedEntries(ctx context.Context, c cluster.Clients, live, next *apiextensionsv1.CustomResourceDefinition, pageSize int64) ([]string, error) {
	if len(live.Spec.Versions) == 1 && stages.SpecVersion(next, live.Spec.Versions[0].Name) != nil && live.Generation == 1 {
		return nil, nil // one version, kept, never changed: no entry can name another
	}
	version := usage.ListVersion(live)
	if version == "" {
		return nil, nil
	}
	gone := func(mf metav1.ManagedFieldsEntry) (string, bool) {
		gv, err := schema.ParseGroupVersion(mf.APIVersion)
		if err != nil || gv.Group != next.Spec.Group || stages.SpecVersion(next, gv.Version) != nil {
			return "", false
		}
		return gv.Version, true
	}
	gvr := schema.GroupVersionResource{Group: live.Spec.Group, Version: version, Resource: live.Spec.Names.Plural}
	found, err := cluster.ObjectsWithEntries(ctx, c.Metadata, gvr, pageSize, gone)
	if cluster.NotServedYet(live, err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the objects of %s: %w", live.Name, err)
	}
	stages.SortByPriority(found.Versions)
	return found.Versions, nil
}
