package migration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/cluster"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/pass"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/verify"
	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// ErrClusterMigratorNotServed: the cluster does not serve storagemigration.k8s.io/v1.
var ErrClusterMigratorNotServed = errors.New("the cluster does not serve storagemigration.k8s.io/v1 StorageVersionMigrations (Kubernetes 1.37+ serves them by default)")

// ClusterMigrationLabel marks the StorageVersionMigrations this plugin creates.
const ClusterMigrationLabel = "app.kubernetes.io/managed-by"

const followEvery = time.Second

// clusterPruneWait bounds the wait for the migrator's prune; then Migrate's guard decides.
const clusterPruneWait = 30 * time.Second

// pendingWarning is how long an untouched migration waits before a warning.
const pendingWarning = time.Minute

// MigrateViaCluster has the cluster's own storage version migrator
// (kube-controller-manager) re-store every object after Migrate's checks. It
// refuses a CRD not proven old→new→old for every object (that migrator checks
// none) or already being migrated, and starts after the switch grace, as the
// migrator prunes at once; where it did not prune (before 1.36), this does.
func MigrateViaCluster(ctx context.Context, cs Clients, name string, opts Options) (*results.Result, error) {
	c := cs.Clients
	opts = opts.withDefaults()
	if err := opts.Restore.DryRun.check(true); err != nil {
		return nil, err
	}
	if c.Migrations == nil {
		return nil, ErrClusterMigratorNotServed
	}
	if _, err := c.Discovery.ServerResourcesForGroupVersion(svmv1.SchemeGroupVersion.String()); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, ErrClusterMigratorNotServed
		}
		return nil, fmt.Errorf("reading discovery of %s: %w", svmv1.SchemeGroupVersion, err)
	}
	log := opts.Log.WithValues("crd", name, "via", "cluster")
	a := cluster.Access{Op: "migrate through the cluster's migrator", Need: []cluster.Permission{
		{Verb: "create", Group: svmv1.GroupName, Resource: "storageversionmigrations"},
		{Verb: "get", Group: svmv1.GroupName, Resource: "storageversionmigrations"},
		{Verb: "list", Group: svmv1.GroupName, Resource: "storageversionmigrations"},
	}}
	p, err := prepare(ctx, c, name, opts, log, a)
	switch {
	case err != nil:
		return nil, err
	case p.done:
		return p.res, nil
	}
	crd, res := p.crd, p.res
	if len(p.unserved) > 0 && !opts.AcceptLoss {
		if some, err := hasObjects(ctx, c, crd); err != nil || some {
			return nil, errors.Join(fmt.Errorf("%w: %s: %s not served, and what only it holds no served version shows, while the cluster's migrator re-stores without checking", ErrNotProven, crd.Name, strings.Join(p.unserved, ", ")), err)
		}
	}
	if len(p.check) > 0 {
		// The cluster's migrator writes without checking an object first.
		return nil, fmt.Errorf("%w: %s: the CRD does not prove %s for every object, and the cluster's migrator re-stores without checking each one",
			ErrNotProven, crd.Name, verify.Trip(p.check[0], res.Storage))
	}
	all, err := cluster.ListClusterMigrations(ctx, c.Migrations)
	if err != nil {
		return nil, err
	}
	// One begun by someone else may have started inside the switch grace and
	// prune behind writes still landing at the old version: it is theirs.
	if running := all.For(crd.Spec.Group, crd.Spec.Names.Plural); running != nil && !running.Done() {
		return nil, fmt.Errorf("%s: the cluster's migration %s is already %s on it: %w", crd.Name, running.Name, running.State, ErrClusterMigrating)
	}
	if opts.Restore.DryRun.persists() && p.grace.began(time.Now()) && !p.grace.wait(ctx, "creating the cluster's migration") {
		return interrupted(res, p.start), nil
	}
	created, err := c.Migrations.StorageVersionMigrations().Create(ctx, &svmv1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: crd.Name + "-",
			Labels:       map[string]string{ClusterMigrationLabel: cluster.FieldManager},
		},
		Spec: svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}},
	}, metav1.CreateOptions{DryRun: opts.Restore.DryRun.sent(), FieldManager: opts.Restore.FieldManager})
	if err != nil {
		return nil, fmt.Errorf("creating the cluster's migration of %s: %w", crd.Name, err)
	}
	if opts.Restore.DryRun == DryRunServer {
		m := cluster.ClusterMigrationOf(created)
		res.ClusterMigration = &m
		res.Failures = []results.Failure{}
		res.PruneReason, res.PruneSkipped = results.PruneDryRun, "dry run: the cluster's migration was accepted by the API server, not created"
		res.Duration = time.Since(p.start)
		return res, nil
	}
	svmName := created.Name
	notify(opts, fmt.Sprintf("%s: created the cluster's migration %s", crd.Name, svmName))
	m, err := follow(ctx, c, crd.Name, svmName, opts)
	res.ClusterMigration = m
	res.Failures = []results.Failure{}
	res.Duration = time.Since(p.start)
	switch {
	case err != nil && ctx.Err() != nil:
		res.StopReason, res.Stopped = results.StopInterrupted, fmt.Sprintf("interrupted while following the cluster's migration %s; it goes on in the cluster", svmName)
		res.PruneReason, res.PruneSkipped = results.PruneIncomplete, "the cluster's migration had not finished"
		return res, nil
	case err != nil:
		return nil, err
	case m.State == results.ClusterMigrationFailed:
		res.StopReason, res.Stopped = results.StopClusterFailed, fmt.Sprintf("the cluster's migration %s failed (%s: %s); the in-tree migrator names no object", svmName, m.Reason, m.Message)
		res.PruneReason, res.PruneSkipped = results.PruneIncomplete, "the cluster's migration failed"
		return res, nil
	}
	return res, pruneAfterCluster(ctx, c, crd, opts, res)
}

func follow(ctx context.Context, c cluster.Clients, crdName, svmName string, opts Options) (*results.ClusterMigration, error) {
	var last results.ClusterMigrationState
	m := results.ClusterMigration{Name: svmName, State: results.ClusterMigrationPending}
	start := time.Now()
	warned := false
	err := wait.PollUntilContextCancel(ctx, followEvery, true, func(ctx context.Context) (bool, error) {
		svm, err := c.Migrations.StorageVersionMigrations().Get(ctx, svmName, metav1.GetOptions{})
		switch {
		case pass.IsTransient(err):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("following the cluster's migration %s: %w", svmName, err)
		}
		m = cluster.ClusterMigrationOf(svm)
		if m.State != last {
			last = m.State
			notify(opts, fmt.Sprintf("%s: the cluster's migration %s is %s (%s)", crdName, svmName, m.State, time.Since(start).Round(time.Second)))
		}
		if m.State == results.ClusterMigrationPending && !warned && time.Since(start) > pendingWarning {
			warned = true
			notify(opts, fmt.Sprintf("%s: no controller has taken up %s for %s: is kube-controller-manager running its storage version migrator (and garbage collector, which it needs)? A resource created since it started is found on its next discovery, within a minute", crdName, svmName, pendingWarning))
		}
		return m.Done(), nil
	})
	return &m, err
}

// pruneAfterCluster reports the migrator's prune, or prunes where it made none.
func pruneAfterCluster(ctx context.Context, c cluster.Clients, crd *apiextensionsv1.CustomResourceDefinition, opts Options, res *results.Result) error {
	// The migrator marks Succeeded first, then clears StorageMigrating and
	// prunes in a second write: wait for that one.
	var fresh *apiextensionsv1.CustomResourceDefinition
	err := wait.PollUntilContextTimeout(ctx, followEvery/4, clusterPruneWait, true, func(ctx context.Context) (bool, error) {
		var err error
		fresh, err = c.CRDs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return !stages.StorageMigrating(fresh), nil
	})
	if err != nil && fresh == nil {
		return err
	}
	storage := stages.StorageVersion(crd)
	if slices.Equal(fresh.Status.StoredVersions, []string{storage}) {
		res.StoredVersionsAfter = fresh.Status.StoredVersions
		if slices.Equal(crd.Status.StoredVersions, []string{storage}) {
			res.PruneReason = results.PruneNothingToPrune
			res.PruneSkipped = nothingToPrune
			return nil
		}
		res.Pruned, res.PruneReason = true, results.PrunedByCluster
		return nil
	}
	if opts.KeepStoredVersions {
		res.PruneReason, res.PruneSkipped = results.PruneDisabled, "not asked to prune"
		res.StoredVersionsAfter = fresh.Status.StoredVersions
		return nil
	}
	return pruneInto(ctx, c, crd, opts, res)
}

func notify(opts Options, msg string) {
	if opts.Notify != nil {
		opts.Notify(msg)
	}
}

func interrupted(res *results.Result, start time.Time) *results.Result {
	res.Failures = []results.Failure{}
	res.StopReason, res.Stopped = results.StopInterrupted, "interrupted while waiting out the switch grace: nothing was re-stored"
	res.PruneReason, res.PruneSkipped = results.PruneIncomplete, "the migration stopped before re-storing"
	res.Duration = time.Since(start)
	return res
}
