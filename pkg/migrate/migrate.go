package migrate

import (
	"context"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// Clients are what a migration talks to the API server with.
type Clients struct {
	CRDs      apiextensionsclient.Interface
	Dynamic   dynamic.Interface
	Metadata  metadata.Interface
	Discovery discovery.DiscoveryInterface
}

// Options tune a migration.
type Options struct {
	RestoreOptions
	// Prune storedVersions to the storage version when every object is
	// proven re-stored.
	Prune bool
	// Force goes ahead while the cluster's own migrator reports
	// StorageMigrating=True.
	Force bool
	// SwitchTimeout bounds the wait for the storage switch to take effect.
	SwitchTimeout time.Duration
	// CleanManagedFields drops managedFields entries of unserved versions
	// after the re-store pass.
	CleanManagedFields bool
}

// Result is what a migration of one CRD did.
type Result struct {
	CRD            string   `json:"crd"`
	Storage        string   `json:"storage"`
	StoredVersions []string `json:"storedVersions"`
	RestoreResult
	// Pruned is true when storedVersions was written down to [storage].
	Pruned bool `json:"pruned"`
	// PruneSkipped says why storedVersions was left as it is.
	PruneSkipped        string        `json:"pruneSkipped,omitempty"`
	StoredVersionsAfter []string      `json:"storedVersionsAfter"`
	Duration            time.Duration `json:"duration"`
	// ManagedFields is the cleaning pass, when one ran.
	ManagedFields *RestoreResult `json:"managedFields,omitempty"`
}

// NeedsAttention reports a migration that finished without proving every
// object re-stored, or without pruning when it was asked to.
func (r *Result) NeedsAttention(prune bool) bool {
	return !r.Complete() || (prune && !r.Pruned && r.PruneSkipped != nothingToPrune) ||
		(r.ManagedFields != nil && !r.ManagedFields.Complete())
}

const nothingToPrune = "storedVersions already holds only the storage version"

// Migrate re-stores every object of a CRD at its storage version and, when
// that is proven, prunes status.storedVersions. Its phases, each of which
// can stop it with the reason: the cluster's own migrator is not at work;
// the storage switch is in effect; a conversion webhook answers; every
// object is re-written; the CRD did not change meanwhile; prune.
func Migrate(ctx context.Context, c Clients, name string, opts Options) (*Result, error) {
	start := time.Now()
	crd, err := c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	res := &Result{CRD: crd.Name, Storage: lifecycle.StorageVersion(crd), StoredVersions: crd.Status.StoredVersions}
	if migrating(crd) && !opts.Force {
		return nil, fmt.Errorf("%s has StorageMigrating=True: the cluster's own storage version migrator is at work on it; let it finish, or pass --force", crd.Name)
	}
	if err := WaitForSwitch(ctx, c.Discovery, crd, opts.SwitchTimeout); err != nil {
		return nil, err
	}
	if err := probeConversion(ctx, c.Dynamic, crd); err != nil {
		return nil, err
	}
	res.RestoreResult = *Restore(ctx, c.Metadata, crd, opts.RestoreOptions)
	res.StoredVersionsAfter = res.StoredVersions
	if opts.CleanManagedFields && ctx.Err() == nil {
		res.ManagedFields = CleanManagedFields(ctx, c.Metadata, crd, opts.RestoreOptions)
	}
	switch {
	case opts.DryRun == DryRunServer:
		res.PruneSkipped = "dry run: nothing was re-stored, so nothing is proven"
	case !opts.Prune:
		res.PruneSkipped = "--prune=false"
	case !res.Complete():
		res.PruneSkipped = "not every object was re-stored"
	default:
		res.Pruned, res.PruneSkipped, res.StoredVersionsAfter, err = Prune(ctx, c.CRDs, crd, opts.DryRun)
		if err != nil {
			return nil, err
		}
	}
	res.Duration = time.Since(start)
	return res, nil
}

// probeConversion proves a conversion webhook answers before anything is
// written: it reads one object at every served version, and at least one
// of those reads needs a conversion. Without a webhook there is nothing to
// prove.
func probeConversion(ctx context.Context, dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition) error {
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		return nil
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}
		if _, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			return fmt.Errorf("the conversion webhook of %s does not answer (reading at %s: %v): nothing was written", crd.Name, v.Name, err)
		}
	}
	return nil
}

func migrating(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.StorageMigrating && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// Prune writes status.storedVersions down to the storage version, through
// /status with the resourceVersion it checked, and only if the CRD is still
// what the migration started from: the same storage version and generation,
// and storedVersions gained nothing but the storage version. Otherwise it
// says why not and leaves it.
func Prune(ctx context.Context, client apiextensionsclient.Interface, started *apiextensionsv1.CustomResourceDefinition, dryRun DryRun) (bool, string, []string, error) {
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	storage := lifecycle.StorageVersion(started)
	for range maxReplans {
		fresh, err := crds.Get(ctx, started.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", nil, err
		}
		if why := pruneRefusal(started, fresh); why != "" {
			return false, why, fresh.Status.StoredVersions, nil
		}
		if slices.Equal(fresh.Status.StoredVersions, []string{storage}) {
			return false, nothingToPrune, fresh.Status.StoredVersions, nil
		}
		fresh.Status.StoredVersions = []string{storage}
		opts := metav1.UpdateOptions{FieldManager: FieldManager}
		if dryRun == DryRunServer {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		updated, err := crds.UpdateStatus(ctx, fresh, opts)
		if err == nil {
			return true, "", updated.Status.StoredVersions, nil
		}
		if !apierrors.IsConflict(err) {
			return false, "", nil, fmt.Errorf("pruning storedVersions of %s: %w", started.Name, err)
		}
	}
	return false, fmt.Sprintf("%s kept changing while pruning: run again", started.Name), nil, nil
}

// pruneRefusal says why the CRD as it is now may not be pruned, or "".
func pruneRefusal(started, fresh *apiextensionsv1.CustomResourceDefinition) string {
	storage := lifecycle.StorageVersion(started)
	switch {
	case lifecycle.StorageVersion(fresh) != storage:
		return fmt.Sprintf("the storage version changed from %s to %s during the migration: run it again", storage, lifecycle.StorageVersion(fresh))
	case fresh.Generation != started.Generation:
		return fmt.Sprintf("the CRD was changed during the migration (generation %d → %d): run it again", started.Generation, fresh.Generation)
	case migrating(fresh):
		return fmt.Sprintf("the cluster's storage version migrator is at work on this CRD (StorageMigrating=True): when it is done, kubectl crdversion prune %s", fresh.Name)
	}
	for _, v := range fresh.Status.StoredVersions {
		if v != storage && !slices.Contains(started.Status.StoredVersions, v) {
			return fmt.Sprintf("storedVersions gained %s during the migration: objects may be stored at it; run it again", v)
		}
	}
	found := false
	for _, v := range fresh.Spec.Versions {
		found = found || v.Name == storage
	}
	if !found {
		return fmt.Sprintf("%s is not in spec.versions: storedVersions must never name a version the CRD lacks", storage)
	}
	return ""
}
