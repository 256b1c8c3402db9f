package crdmigrator_test

import (
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kubectl-crdversion/kubectl-crdversion/controller/crdmigrator"
)

// An operator adds the Migrator to its manager: on the leader, it
// migrates the operator's CRDs at start and at each change of them, and
// prunes storedVersions once every object is proven at the storage
// version. docs/controller.md says what it decides, and when.
func ExampleNew() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{LeaderElection: true, LeaderElectionID: "widgets-operator"})
	if err != nil {
		panic(err)
	}
	migrator, err := crdmigrator.New(mgr, crdmigrator.Options{
		CRDs: []string{"widgets.example.com"},
	})
	if err != nil {
		panic(err)
	}
	if err := mgr.Add(migrator); err != nil {
		panic(err)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		panic(err)
	}
}

// The CRDs may be chosen by label rather than by name.
func ExampleOptions_selector() {
	_ = crdmigrator.Options{Selector: labels.SelectorFromSet(labels.Set{"app.kubernetes.io/part-of": "widgets-operator"})}
}
