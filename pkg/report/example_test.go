package report_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/report"
)

// A script reads kubectl crdversion status -o json and acts on each CRD's
// next step: the step's command line, or why there is none.
func Example_status() {
	out := []byte(`{"apiVersion": "crdversion.kubectl.io/v1alpha1", "kind": "StatusReport", "items": [
	  {"name": "widgets.example.com", "storageVersion": "v1", "storedVersions": ["v1beta1", "v1"],
	   "versions": [{"name": "v1", "served": true, "storage": true, "stored": true, "stage": "storage"},
	                {"name": "v1beta1", "served": true, "deprecated": true, "stored": true, "stage": "deprecated"}],
	   "next": {"action": "run", "command": "kubectl crdversion migrate widgets.example.com",
	            "reason": "objects may still be stored at v1beta1"}}]}`)
	var status report.StatusReport
	if err := json.Unmarshal(out, &status); err != nil {
		log.Fatal(err)
	}
	for _, crd := range status.Items {
		fmt.Printf("%s: stored at %v; pending %v\n", crd.Name, crd.StoredVersions, crd.Pending())
		fmt.Printf("next (%s): %s\n", crd.Next.Action, crd.Next.Command)
	}
	// Output:
	// widgets.example.com: stored at [v1beta1 v1]; pending [v1beta1]
	// next (run): kubectl crdversion migrate widgets.example.com
}
