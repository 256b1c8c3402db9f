package migrate

import (
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kubectl-crdversion/kubectl-crdversion/internal/engine/migration"
)

// Clients are the connections to one cluster the calls work through: made
// once, kept by a reconciler, safe for concurrent use.
type Clients struct{ engine migration.Clients }

// NewClients connects to the cluster cfg names. Writes to objects spread over
// several connections, so that behind a load balancer each API server is asked.
func NewClients(cfg *rest.Config) (Clients, error) {
	c, err := migration.NewClients(cfg)
	return Clients{engine: c}, err
}

// CRDs is the clientset the calls read and write CRDs with, for an informer of
// one's own.
func (c Clients) CRDs() apiextensionsclient.Interface { return c.engine.CRDs }

// Metadata is the client the calls list objects with.
func (c Clients) Metadata() metadata.Interface { return c.engine.Metadata }
