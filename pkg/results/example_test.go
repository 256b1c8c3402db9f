package results_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// A migration's result says whether every object was re-stored and, in a
// word a program branches on, why storedVersions was or was not pruned.
func ExampleResult() {
	// One item of kubectl crdversion migrate -o json, or what migrate.Migrate returns.
	out := []byte(`{"crd": "widgets.example.com", "storage": "v1", "storedVersions": ["v1beta1", "v1"],
	  "listed": 120, "rewritten": 118, "failed": 2, "pruned": false,
	  "pruneSkipped": "2 objects failed", "pruneReason": "Incomplete", "storedVersionsAfter": ["v1beta1", "v1"]}`)
	var res results.Result
	if err := json.Unmarshal(out, &res); err != nil {
		log.Fatal(err)
	}
	switch {
	case res.PruneReason == results.PrunePruned:
		fmt.Println("done: storedVersions is", res.StoredVersionsAfter)
	case !res.Complete():
		fmt.Printf("%d of %d objects failed; storedVersions kept: %s\n", res.Failed, res.Listed, res.PruneSkipped)
	default:
		fmt.Println("not pruned:", res.PruneReason)
	}
	// Output:
	// 2 of 120 objects failed; storedVersions kept: 2 objects failed
}
