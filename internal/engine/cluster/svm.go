package cluster

import (
	"context"
	"errors"
	"fmt"

	svmv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	svmclient "k8s.io/client-go/kubernetes/typed/storagemigration/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// ClusterMigrations are the cluster's StorageVersionMigrations (storagemigration.k8s.io/v1).
type ClusterMigrations struct {
	// Served is false where the API is not served: no migration can exist.
	Served bool
	items  []svmv1.StorageVersionMigration
}

// ListClusterMigrations lists them in one request. A cluster not serving the API has none;
// other errors (403 included) are the caller's to report.
func ListClusterMigrations(ctx context.Context, c svmclient.StorageVersionMigrationsGetter) (ClusterMigrations, error) {
	list, err := c.StorageVersionMigrations().List(ctx, metav1.ListOptions{})
	switch {
	case isNotServed(err):
		return ClusterMigrations{}, nil
	case err != nil:
		return ClusterMigrations{}, fmt.Errorf("listing storageversionmigrations.storagemigration.k8s.io: %w", err)
	}
	return ClusterMigrations{Served: true, items: list.Items}, nil
}

// isNotServed tells an unserved resource from a missing object: its 404 names no object.
func isNotServed(err error) bool {
	if !apierrors.IsNotFound(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	d := status.Status().Details
	return d == nil || d.Name == ""
}

// For returns the newest migration of group/resource, or nil.
func (m ClusterMigrations) For(group, resource string) *results.ClusterMigration {
	var newest *svmv1.StorageVersionMigration
	for i := range m.items {
		it := &m.items[i]
		if it.Spec.Resource.Group != group || it.Spec.Resource.Resource != resource {
			continue
		}
		if newest == nil || newest.CreationTimestamp.Before(&it.CreationTimestamp) {
			newest = it
		}
	}
	if newest == nil {
		return nil
	}
	cm := ClusterMigrationOf(newest)
	return &cm
}

// ClusterMigrationOf reads a migration's state from its conditions (untouched: Pending).
func ClusterMigrationOf(svm *svmv1.StorageVersionMigration) results.ClusterMigration {
	cm := results.ClusterMigration{Name: svm.Name, State: results.ClusterMigrationPending, Created: svm.CreationTimestamp.Time}
	for _, s := range []results.ClusterMigrationState{results.ClusterMigrationSucceeded, results.ClusterMigrationFailed, results.ClusterMigrationRunning} {
		if c := meta.FindStatusCondition(svm.Status.Conditions, string(s)); c != nil && c.Status == metav1.ConditionTrue {
			cm.State, cm.Reason, cm.Message = s, c.Reason, c.Message
			return cm
		}
	}
	return cm
}
