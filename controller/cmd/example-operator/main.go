// Command example-operator is the smallest operator that keeps its CRDs
// migrated: a controller-runtime manager with the Migrator and nothing
// else. An operator adds the lines between "The Migrator" and mgr.Start to
// its own main; docs/controller.md walks through them, and test/controller
// runs this program against kube-apiserver.
//
//	go run ./cmd/example-operator --crd widgets.example.com --leader-election-namespace default
package main

import (
	"flag"
	"os"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubectl-crdversion/kubectl-crdversion/controller/crdmigrator"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
)

// names is a repeatable flag.
type names []string

func (n *names) String() string     { return strings.Join(*n, ",") }
func (n *names) Set(v string) error { *n = append(*n, v); return nil }

func main() {
	var crds names
	flag.Var(&crds, "crd", "a CRD of the operator's, by name (repeat for several)")
	namespace := flag.String("leader-election-namespace", "", "where the leader Lease lives (in a pod: its own namespace)")
	metricsAddr := flag.String("metrics-bind-address", ":8080", `where /metrics is served ("0": nowhere)`)
	grace := flag.Duration("switch-grace", 0, "how long after a storage switch a write begun before it may still land at the old version (0: 2m; -1ns: none)")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Metrics:                 metricsserver.Options{BindAddress: *metricsAddr},
		LeaderElection:          true,
		LeaderElectionID:        "example-operator-crd-migration",
		LeaderElectionNamespace: *namespace,
	})
	if err != nil {
		log.Error(err, "building the manager")
		os.Exit(1)
	}

	// The Migrator: it runs on the leader only, at start and on every
	// change of the CRDs named.
	migrator, err := crdmigrator.New(mgr, crdmigrator.Options{
		CRDs:    crds,
		Migrate: migrate.Options{SwitchGrace: switchGrace(*grace)},
	})
	if err != nil {
		log.Error(err, "building the Migrator")
		os.Exit(1)
	}
	if err := mgr.Add(migrator); err != nil {
		log.Error(err, "adding the Migrator")
		os.Exit(1)
	}

	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "running the manager")
		os.Exit(1)
	}
}

// switchGrace reads the flag: a negative duration is migrate's "none".
func switchGrace(d time.Duration) time.Duration {
	if d < 0 {
		return migrate.NoSwitchGrace
	}
	return d
}
