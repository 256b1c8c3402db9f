package check

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/results"
)

// LastAppliedAnnotation is where kubectl apply (client-side) keeps the
// whole manifest it applied.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// annotationsLimit is the API server's bound on an object's annotations,
// keys and values together (metadata.annotations: Too long).
const annotationsLimit = 256 << 10

// lastAppliedTooLong is a manifest that client-side apply cannot apply:
// it writes the whole manifest into LastAppliedAnnotation, and the API
// server refuses annotations past 256 KiB. Kyverno's CRDs are such; server-
// side apply keeps no copy and takes them. Where old carries the
// annotation, the CRD is applied client-side, and its next apply fails: an
// error; elsewhere (the files, a CRD applied another way, or one the
// cluster does not have yet, which client-side apply cannot create either)
// it fails only where someone applies it client-side: a warning.
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

// lastAppliedSize is the size of the annotations client-side apply would
// write: the manifest as JSON (without the annotation itself), and the
// manifest's other annotations.
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
