package check

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// LastAppliedAnnotation is where client-side kubectl apply keeps the whole manifest applied.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// annotationsLimit is the API server's bound on an object's annotations, keys and values.
const annotationsLimit = 256 << 10

// lastAppliedTooLong is a manifest client-side apply cannot apply: its copy in the annotation
// passes the API server's 256 KiB (server-side apply keeps none). Where old carries the
// annotation its next apply fails: an error; elsewhere only a client-side apply fails: a warning.
func lastAppliedTooLong(old, new *apiextensionsv1.CustomResourceDefinition) []results.Finding {
	size := lastAppliedSize(new)
	if size <= annotationsLimit {
		return nil
	}
	f := results.Finding{Severity: lifecycle.SeverityWarning, Kind: results.FindingRejected, CRD: new.Name, Rule: "lastAppliedTooLong",
		Message: fmt.Sprintf("kubectl apply without --server-side writes the whole manifest into the annotation %s: %d KiB with the other annotations, and the API server refuses more than 256 KiB (metadata.annotations: Too long: may not be more than 262144 bytes)", LastAppliedAnnotation, size>>10),
		Fix:     []lifecycle.Advice{{Text: "apply it server-side, which keeps no copy of the manifest: kubectl apply --server-side -f NEW (Helm 3: the CRDs are created, not applied; Argo CD: the sync option ServerSideApply=true; Flux applies server-side already)"}}}
	if old == nil {
		f.Message = "nothing was applied under this name before (new to the cluster, or to the files), and kubectl apply -f NEW cannot create it: " + f.Message
	} else {
		if _, ok := old.Annotations[LastAppliedAnnotation]; ok {
			f.Severity = lifecycle.SeverityError
			f.Message = "the live CRD was applied client-side (it carries " + LastAppliedAnnotation + "), so its next kubectl apply -f NEW is refused: " + f.Message
		}
	}
	return []results.Finding{f}
}

// lastAppliedSize is what client-side apply would write: the manifest's JSON and other annotations.
func lastAppliedSize(crd *apiextensionsv1.CustomResourceDefinition) int {
	c := crd.DeepCopy()
	delete(c.Annotations, LastAppliedAnnotation)
	c.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	raw, err := json.Marshal(c)
	if err != nil {
		return 0
	}
	size := len(LastAppliedAnnotation) + len(raw)
	for k, v := range c.Annotations {
		size += len(k) + len(v)
	}
	return size
}
