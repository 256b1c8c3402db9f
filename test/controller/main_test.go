// Package controller_test runs the controller's Migrator in real
// controller-runtime managers against kube-apiserver (test/full's
// sandbox, as a process): leader election on real Leases, Events, the
// cluster's own StorageVersionMigrations. etcd is the ground truth for
// what is stored.
package controller_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-crdversion/kubectl-crdversion/test/internal/fullsandbox"
)

// shared is one kube-apiserver the tests share; each test works in CRDs
// and namespaces of its own.
var shared *fullsandbox.Cluster

func TestMain(m *testing.M) {
	// Each replica logs through its own logger (Options.Logger); the
	// global one only hears controller-runtime's own start-up.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(func() int {
		var err error
		if shared, err = fullsandbox.Start(fullsandbox.Options{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer shared.Stop()
		return m.Run()
	}())
}
