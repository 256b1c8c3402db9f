package crdmigrator

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The metrics are served with the manager's own (controller-runtime's
// registry), labelled by CRD. Counters add up every run's objects: an
// object refused on two runs counts twice.
var (
	objectsRestored = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crdversion_migration_objects_restored_total",
		Help: "Objects re-stored at the storage version (written back because they were stored at another one).",
	}, []string{"crd"})
	objectsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crdversion_migration_objects_refused_total",
		Help: "Objects left as they were because re-storing them would lose data (old→new→old changes them); they block the prune.",
	}, []string{"crd"})
	objectsFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crdversion_migration_objects_failed_total",
		Help: "Objects whose re-store or managedFields cleanup failed, or that the write changed; they block the prune.",
	}, []string{"crd"})
	runs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "crdversion_migration_runs_total",
		Help: "Migrations run, by how they ended: done, refused, incomplete, error.",
	}, []string{"crd", "result"})
	lastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "crdversion_migration_last_success_timestamp_seconds",
		Help: "When a run last left the CRD with every object proven at the storage version and storedVersions pruned (or nothing to prune), in Unix seconds.",
	}, []string{"crd"})
)

func init() {
	metrics.Registry.MustRegister(objectsRestored, objectsRefused, objectsFailed, runs, lastSuccess)
}

func observe(crd string, c counts) {
	objectsRestored.WithLabelValues(crd).Add(float64(c.restored))
	objectsRefused.WithLabelValues(crd).Add(float64(c.refused))
	failuresSeen(crd, c.failed)
}

func failuresSeen(crd string, n int64) { objectsFailed.WithLabelValues(crd).Add(float64(n)) }

func countRun(crd, result string) { runs.WithLabelValues(crd, result).Inc() }

func markSuccess(crd string) { lastSuccess.WithLabelValues(crd).Set(float64(time.Now().Unix())) }
