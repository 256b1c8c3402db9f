package migrate

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/stages"
	"github.com/kubectl-crdversion/kubectl-crdversion/pkg/lifecycle"
)

// Assess says where each version of crd stands, what is wrong with its
// versions and the next step, as status does (Pending lists the versions a
// migration is owed for). It reads crd only and sends nothing.
func Assess(crd *apiextensionsv1.CustomResourceDefinition) lifecycle.Assessment {
	return stages.Assess(crd)
}
