package migrate_test

import (
	"context"
	"errors"
	"log"

	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/migrate"
)

// An operator re-stores the objects of the CRD it owns at start-up, after
// its new release switched the storage version, and prunes storedVersions
// once that is proven. test/migrate runs the same program against a real
// API server.
func Example_operator() {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		log.Fatal(err)
	}
	clients, err := migrate.NewClients(cfg)
	if err != nil {
		log.Fatal(err)
	}
	res, err := migrate.Migrate(context.Background(), clients, "widgets.example.com", migrate.Options{
		Restore: migrate.RestoreOptions{FieldManager: "widget-operator"},
	})
	switch {
	case errors.Is(err, migrate.ErrClusterMigrating):
		log.Print("the cluster's own migrator is at work; try again later")
	case err != nil:
		log.Fatal(err)
	case !res.Complete():
		log.Printf("%d objects failed; storedVersions left as it was: %s", res.Failed, res.PruneSkipped)
	default:
		log.Printf("%d objects re-stored at %s; prune: %s", res.Rewritten, res.Storage, res.PruneReason)
	}
}
